/**
 * Identities of Slack things as strings. A user's message is `channel:ts` (Slack's own identity
 * of a message): it is both our message id and the de-duplication key, so an Events API retry
 * (same event_id) and the app_mention + message twin (two event_ids, one message) collapse.
 */

import { RedisKeys } from '../../queue/keys.js';

export interface MessageRef {
  channel: string;
  ts: string;
}

const TS = /^\d+\.\d+$/;

export function messageKey(channel: string, ts: string): string {
  return `${channel}:${ts}`;
}

/** The channel and ts a message key names; null for ids that are not message keys (e.g. /ask). */
export function parseMessageKey(id: string): MessageRef | null {
  const at = id.lastIndexOf(':');
  if (at <= 0) return null;
  const channel = id.slice(0, at);
  const ts = id.slice(at + 1);
  return /^[A-Z0-9]+$/.test(channel) && TS.test(ts) ? { channel, ts } : null;
}

/** The id of an /ask invocation: slash commands have no message, but each has a unique trigger id. */
export function askKey(triggerId: string): string {
  return `ask:${triggerId}`;
}

/** A 1:1 DM with the bot. Events carry channel_type; slash commands and app_mention may not, and DM ids start with D. */
export function isDirect(channel: string, channelType?: string): boolean {
  return channelType !== undefined ? channelType === 'im' : channel.startsWith('D');
}

/** A thread in which the bot has answered (for follow-ups without a mention). */
export function engagedThreadKey(prefix: string, channel: string, thread: string): string {
  return new RedisKeys(prefix).slackEngagedThread(channel, thread);
}
