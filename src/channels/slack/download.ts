import { readCapped } from '../kit/read-capped.js';
import { formatDecimalBytes } from '../../lib/text.js';
import type { Attachment } from '../types.js';

/** The bot token is sent only to Slack's file hosts, or to the Web API's own origin (GovSlack, a proxy, a test fake). */
export function mayReceiveToken(url: URL, apiBase: string): boolean {
  const host = url.hostname;
  const slackHost = ['slack.com', 'slack-gov.com'].some((d) => host === d || host.endsWith(`.${d}`));
  return (slackHost && url.protocol === 'https:') || url.origin === new URL(apiBase).origin;
}

/**
 * Fetches a file shared in Slack (its url_private) with the bot token, reading at most
 * `maxBytes`. Slack answers a request without the files:read scope with its sign-in page
 * (200, text/html) instead of an error, so an HTML answer for a file that is not HTML is refused.
 */
export async function downloadSlackFile(attachment: Attachment, token: string, apiBase: string, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
  const url = new URL(attachment.ref);
  if (!mayReceiveToken(url, apiBase)) throw new Error(`not a Slack file URL (${url.host}); the bot token is not sent there`);
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal });
  if (!res.ok || !res.body) throw new Error(`Slack answered HTTP ${res.status} for the file`);
  const type = res.headers.get('content-type') ?? '';
  if (type.startsWith('text/html') && !(attachment.mime ?? '').includes('html')) {
    await res.body.cancel();
    throw new Error('Slack sent its sign-in page instead of the file: the app needs the files:read scope (reinstall it after adding the scope)');
  }
  return readCapped(res, maxBytes, () => new Error(`larger than the ${formatDecimalBytes(maxBytes)} limit`));
}
