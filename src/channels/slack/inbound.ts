import type { Attachment, InboundMessage } from '../types.js';
import { askKey, isDirect, messageKey } from './ids.js';
import { mentions, slackToPlain } from './text.js';

/** The fields of an `app_mention` or `message` event this channel reads. */
export interface SlackMessageEvent {
  type: string;
  channel: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  app_id?: string;
  subtype?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  files?: SlackFile[];
  /** The sender's workspace (Slack's native answer streaming in channels names it). */
  team?: string;
  user_team?: string;
}

export interface SlackFile {
  id: string;
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  url_private?: string;
  url_private_download?: string;
  mode?: string;
}

/** The fields of a slash command payload this channel reads. */
export interface SlackCommandPayload {
  command: string;
  text: string;
  channel_id: string;
  user_id: string;
  user_name?: string;
  trigger_id: string;
  /** The workspace the command was typed in, and the sender's own (they differ for a Slack Connect user). */
  team_id?: string;
  user_team?: string;
}

/**
 * Why an event is (or is not) for the bot:
 * - `dm`: a message in a DM with the bot;
 * - `mention`: the bot is mentioned in a channel (app_mention, or the `message` twin of one);
 * - `thread_reply`: a reply without a mention in a channel thread: counts only when follow-ups
 *   are enabled and the bot has answered in that thread;
 * - `ignore`, with the reason.
 */
export type Trigger = { kind: 'dm' | 'mention' | 'thread_reply' } | { kind: 'ignore'; reason: string };

/** Message subtypes that are a person writing: plain, with files, a thread reply also sent to the channel. */
const USER_SUBTYPES = new Set([undefined, 'file_share', 'thread_broadcast']);

export function classifyEvent(event: SlackMessageEvent, botUserId: string | undefined): Trigger {
  if (!USER_SUBTYPES.has(event.subtype)) return { kind: 'ignore', reason: `subtype ${event.subtype}` };
  if (event.bot_id !== undefined || event.user === undefined) return { kind: 'ignore', reason: 'bot message' };
  if (botUserId !== undefined && event.user === botUserId) return { kind: 'ignore', reason: 'own message' };
  if (!event.channel || !event.ts) return { kind: 'ignore', reason: 'no channel or ts' };
  if (isDirect(event.channel, event.channel_type)) return { kind: 'dm' };
  if (event.type === 'app_mention' || mentions(event.text ?? '', botUserId)) return { kind: 'mention' };
  if (event.thread_ts !== undefined && event.thread_ts !== event.ts) return { kind: 'thread_reply' };
  return { kind: 'ignore', reason: 'no mention' };
}

export function attachmentsOf(files: readonly SlackFile[] | undefined): Attachment[] {
  return (files ?? []).flatMap((f) => {
    const ref = f.url_private_download ?? f.url_private;
    // Files past a free workspace's storage limit, or deleted ones, come without a URL.
    if (!ref || f.mode === 'tombstone' || f.mode === 'hidden_by_limit') return [];
    const attachment: Attachment = { name: f.name ?? f.title ?? f.id, ref };
    if (f.size !== undefined) attachment.size = f.size;
    if (f.mimetype) attachment.mime = f.mimetype;
    return [attachment];
  });
}

/**
 * The normalised message of a user's Slack message. Session: a channel thread (a top-level
 * mention starts one keyed by its ts); a DM per user, and per thread when the user threads.
 * The id and the de-duplication key are both `channel:ts`, the identity of the user's message.
 */
/** A sender of another organisation than the installing workspace (a Slack Connect channel). */
export function isForeign(userTeam: string | undefined, homeTeam: string | undefined): boolean {
  return userTeam !== undefined && homeTeam !== undefined && userTeam !== homeTeam;
}

export function toInbound(event: SlackMessageEvent, botUserId: string | undefined, now: number, homeTeam?: string): InboundMessage | null {
  const text = slackToPlain(event.text ?? '', botUserId);
  const attachments = attachmentsOf(event.files);
  if (!text && attachments.length === 0) return null;
  const direct = isDirect(event.channel, event.channel_type);
  const thread = direct ? event.thread_ts : (event.thread_ts ?? event.ts);
  const key = messageKey(event.channel, event.ts);
  const message: InboundMessage = {
    v: 1,
    id: key,
    platform: 'slack',
    conversation: event.channel,
    sender: { id: event.user ?? 'unknown', ...(isForeign(event.user_team, homeTeam) && { foreign: true as const }) },
    where: direct ? { kind: 'dm' } : { kind: 'group', ids: [event.channel] },
    text: text || '(sent files)',
    attachments,
    eventId: key,
    receivedAt: now,
    replyTo: event.ts,
  };
  if (thread !== undefined) message.thread = thread;
  const team = event.user_team ?? event.team;
  if (team !== undefined) message.meta = { team };
  return message;
}

/** What `/ask …` asks for: a question, one of the chat commands by name, or nothing (usage). */
export type AskRequest = { kind: 'question' } | { kind: 'command'; name: AskCommand; args: string } | { kind: 'usage' };
type AskCommand = 'help' | 'status' | 'stop' | 'reset' | 'schedules' | 'unschedule' | 'agent' | 'memory' | 'forget';

export function parseAsk(text: string): AskRequest {
  const t = text.trim();
  if (!t) return { kind: 'usage' };
  const bare = /^\/?(help|status|stop|reset|schedules|agent|memory)$/i.exec(t)?.[1]?.toLowerCase();
  if (bare) return { kind: 'command', name: bare as AskCommand, args: '' };
  const forget = /^\/?forget(?:\s+(\S+))?$/i.exec(t);
  if (forget) return { kind: 'command', name: 'forget', args: forget[1] ?? '' };
  const unschedule = /^\/?unschedule(?:\s+(\S+))?$/i.exec(t);
  return unschedule ? { kind: 'command', name: 'unschedule', args: unschedule[1] ?? '' } : { kind: 'question' };
}

/**
 * `/ask` as a normalised message: the session is the conversation it was typed in (a channel's
 * /ask conversation, or the DM), the answer goes at the top level there and names who asked.
 */
export function askToInbound(payload: SlackCommandPayload, text: string, now: number, homeTeam?: string): InboundMessage {
  const key = askKey(payload.trigger_id);
  return {
    v: 1,
    id: key,
    platform: 'slack',
    conversation: payload.channel_id,
    sender: {
      id: payload.user_id,
      ...(payload.user_name && { name: payload.user_name }),
      ...(isForeign(payload.user_team ?? payload.team_id, homeTeam) && { foreign: true as const }),
    },
    where: isDirect(payload.channel_id) ? { kind: 'dm' } : { kind: 'group', ids: [payload.channel_id] },
    text,
    attachments: [],
    eventId: key,
    receivedAt: now,
    meta: { via: 'ask', user: payload.user_id, ...(payload.team_id !== undefined && { team: payload.team_id }) },
    privateReply: true,
  };
}
