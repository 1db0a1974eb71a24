import { readCapped } from '../kit/read-capped.js';
import { formatDecimalBytes } from '../../lib/text.js';
import type { Attachment } from '../types.js';

/** Where Discord serves attachments. The REST host (DISCORD_API_URL) is added by the module. */
export const CDN_HOSTS = ['cdn.discordapp.com', 'media.discordapp.net'];

/**
 * Fetches an attachment's signed CDN URL (no credentials: the URL carries its own signature, and
 * the bot token must never go to a host that is not Discord's), refusing past `maxBytes` without
 * reading on.
 */
export async function downloadAttachment(attachment: Attachment, maxBytes: number, signal: AbortSignal, hosts: readonly string[]): Promise<Uint8Array> {
  let url: URL;
  try {
    url = new URL(attachment.ref);
  } catch {
    throw new Error(`not a URL: ${attachment.name}`);
  }
  if (!/^https?:$/.test(url.protocol) || !hosts.includes(url.host)) throw new Error(`refusing to download from ${url.host}: not a Discord attachment host`);
  const res = await fetch(url, { signal, redirect: 'error' });
  if (!res.ok || !res.body) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`download failed: HTTP ${res.status}`);
  }
  return readCapped(res, maxBytes, () => new Error(`larger than the ${formatDecimalBytes(maxBytes)} limit`));
}
