import { createHmac } from 'node:crypto';
import { BOT_TOKEN, BOT_USER_ID, messageView, TEAM_ID, type FakeMessage, type FakeSlack } from '../../fakes/slack-server.js';
import { startStack, type Stack, readyz } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/processes.js';

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

/** A Slack user as interaction payloads name them. */
export interface SlackUser {
  id: string;
  username: string;
}

/** The buttons of a message as it was posted (what a user who clicks saw, even after the message was updated). */
export function buttonsOf(message: FakeMessage): { text: string; action_id: string; value?: string; style?: string; block_id?: string }[] {
  const blocks = JSON.parse(String(message.params.blocks ?? '[]')) as {
    type: string;
    block_id?: string;
    elements?: { type: string; text: { text: string }; action_id: string; value?: string; style?: string }[];
  }[];
  return blocks.flatMap((b) =>
    b.type === 'actions'
      ? (b.elements ?? []).map((e) => ({
          text: e.text.text,
          action_id: e.action_id,
          ...(e.value !== undefined && { value: e.value }),
          ...(e.style && { style: e.style }),
          ...(b.block_id && { block_id: b.block_id }),
        }))
      : [],
  );
}

let actionSeq = 0;
/**
 * The `block_actions` interaction Slack sends when `user` clicks the button labelled `label` on
 * `message` (or a button given as action_id + value, e.g. a forged one).
 */
export function blockActions(message: FakeMessage, user: SlackUser, label: string | { action_id: string; value: string }): Record<string, unknown> {
  const button = typeof label === 'string' ? buttonsOf(message).find((b) => b.text === label) : label;
  if (!button) throw new Error(`no button "${String(label)}" on message ${message.ts}`);
  const now = Date.now() / 1000;
  return {
    type: 'block_actions',
    user: { id: user.id, username: user.username, name: user.username, team_id: TEAM_ID },
    api_app_id: 'A0FAKE',
    token: 'legacy-verification-token',
    container: {
      type: 'message',
      message_ts: message.ts,
      channel_id: message.channel,
      is_ephemeral: false,
      ...(message.thread_ts && { thread_ts: message.thread_ts }),
    },
    trigger_id: `${Math.floor(now)}.${++actionSeq}.fake`,
    team: { id: TEAM_ID, domain: 'fake' },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: message.channel, name: 'general' },
    message: messageView(message),
    state: { values: {} },
    response_url: 'http://127.0.0.1:9/actions/unused',
    actions: [
      {
        action_id: button.action_id,
        block_id: 'block_id' in button ? button.block_id : 'sb_approval',
        text: { type: 'plain_text', text: typeof label === 'string' ? label : 'Button', emoji: true },
        ...('value' in button && { value: button.value }),
        type: 'button',
        action_ts: now.toFixed(6),
      },
    ],
  };
}

/** An interaction as Slack posts it over HTTP: form-encoded with the JSON in `payload`, signed like events. */
export async function postInteraction(baseUrl: string, payload: unknown, timestamp?: number): Promise<Response> {
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  return fetch(`${baseUrl}/slack/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...signed(body, timestamp) },
    body,
  });
}

/** The approval cards the bot posted (messages posted with blocks), in posting order. */
export function cards(slack: FakeSlack, channel?: string): FakeMessage[] {
  return slack.messages.filter((m) => m.params.blocks !== undefined && (channel === undefined || m.channel === channel));
}

/**
 * The bot's answers (not status messages), in posting order. Status messages (and approval cards)
 * are posted with unfurls off always, answers only by default: these helpers tell them apart in a
 * stack started with LINK_PREVIEWS=1, as startSlackStack starts it (the default, where nothing
 * unfurls, is test/security/link-previews.test.ts's).
 */
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

/** The real roles with Slack over signed HTTP events against `fake`, once the bot is identified (auth.test answered). */
export async function startSlackStack(name: string, fake: FakeSlack, env: Record<string, string> = {}): Promise<Stack> {
  // LINK_PREVIEWS=1: answers() tells answers from status messages by their unfurl arguments.
  const stack = await startStack(name, {
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: fake.apiUrl,
    LINK_PREVIEWS: '1',
    ...env,
  });
  await waitFor('slack identity', async () => (await (await readyz(stack)).json()).channels?.slack?.connected === true);
  return stack;
}
