import { createHmac } from 'node:crypto';
import { BOT_USER_ID, TEAM_ID, type FakeMessage, type FakeSlack } from '../../fakes/slack-server.js';

export const SIGNING_SECRET = 'test-signing-secret-8f3a';

/** Slack's v0 request signature: HMAC-SHA256 over `v0:timestamp:body` with the signing secret. */
export function signed(body: string, timestamp = Math.floor(Date.now() / 1000), secret = SIGNING_SECRET): Record<string, string> {
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return { 'x-slack-signature': signature, 'x-slack-request-timestamp': String(timestamp) };
}

let tsSeq = 0;
/** A fresh Slack ts (seconds.micro), increasing. */
export function nextTs(): string {
  return `${1_700_000_000 + Math.floor(++tsSeq / 1000)}.${String(tsSeq % 1_000_000).padStart(6, '0')}`;
}

let eventSeq = 0;
export function eventId(): string {
  return `Ev0${(++eventSeq).toString().padStart(8, '0')}`;
}

/** An Events API envelope as Slack posts it. */
export function eventCallback(event: Record<string, unknown>, id = eventId()): Record<string, unknown> {
  return {
    token: 'legacy-verification-token',
    team_id: TEAM_ID,
    api_app_id: 'A0FAKE',
    event: { event_ts: event.ts, ...event },
    type: 'event_callback',
    event_id: id,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ enterprise_id: null, team_id: TEAM_ID, user_id: BOT_USER_ID, is_bot: true, is_enterprise_install: false }],
    is_ext_shared_channel: false,
    event_context: '4-eyJldCI6ImFwcF9tZW50aW9uIn0',
  };
}

export function appMention(channel: string, ts: string, text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'app_mention', user: 'U0ADA', text: `<@${BOT_USER_ID}> ${text}`, ts, channel, client_msg_id: `msg-${ts}`, ...extra };
}

export async function postEvent(baseUrl: string, payload: unknown, headers: Record<string, string> = {}, timestamp?: number): Promise<Response> {
  const body = JSON.stringify(payload);
  return fetch(`${baseUrl}/slack/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...signed(body, timestamp), ...headers }, body });
}

/** A slash command as Slack posts it (form-encoded, signed). */
export async function postCommand(baseUrl: string, fields: Record<string, string>): Promise<Response> {
  const body = new URLSearchParams({
    token: 'legacy-verification-token',
    team_id: TEAM_ID,
    team_domain: 'fake',
    channel_name: 'general',
    user_name: 'ada',
    command: '/ask',
    api_app_id: 'A0FAKE',
    is_enterprise_install: 'false',
    response_url: 'http://127.0.0.1:9/commands/unused',
    trigger_id: `${Date.now()}.${Math.random().toString(16).slice(2)}`,
    ...fields,
  }).toString();
  return fetch(`${baseUrl}/slack/events`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...signed(body) }, body });
}

/** The bot's answers (not status messages, which are posted without link unfurls), in posting order. */
export function answers(slack: FakeSlack, channel?: string): FakeMessage[] {
  return slack.messages.filter((m) => m.params.unfurl_links === undefined && (channel === undefined || m.channel === channel));
}

export function statuses(slack: FakeSlack): FakeMessage[] {
  return slack.messages.filter((m) => m.params.unfurl_links !== undefined);
}

/** The user messages of the turn a model request answers: those after the last assistant message. */
export function newUserTexts(body: { messages: { role: string; content: unknown }[] }): string[] {
  const msgs = body.messages;
  let i = msgs.length;
  while (i > 0 && msgs[i - 1]!.role === 'user') i--;
  return msgs.slice(i).map((m) => String(m.content));
}

export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
