import type { InboundMessage } from '../types.js';

/**
 * How Telegram's identities map onto a normalised message:
 * - conversation = the chat id (in a DM the chat id is the user's id, so a DM session is per user);
 * - thread = the forum topic id (message_thread_id) of a topic message, its own session;
 * - eventId = `chatId:messageId`, the identity of the user's message: a redelivered update
 *   (same update_id after a restart or a webhook retry) carries the same message, so it is
 *   dropped by the intake's de-duplication;
 * - replyTo = the user's message id; meta.chatType tells the outbound half whether to reply
 *   in place (groups) or just post (DMs).
 */
export const PLATFORM = 'telegram';

/** The message field that carries the chat type. */
export const META_CHAT_TYPE = 'chatType';

export function eventIdOf(chatId: number, messageId: number): string {
  return `${chatId}:${messageId}`;
}

export function chatIdOf(to: Pick<InboundMessage, 'conversation'>): number {
  const id = Number(to.conversation);
  if (!Number.isSafeInteger(id)) throw new Error(`not a Telegram chat id: ${to.conversation}`);
  return id;
}

export function threadIdOf(to: Pick<InboundMessage, 'thread'>): number | undefined {
  return to.thread === undefined ? undefined : Number(to.thread);
}

/** A private chat answers with plain posts; a group answers as a reply to the request. */
export function isGroup(to: Pick<InboundMessage, 'meta'>): boolean {
  const type = to.meta?.[META_CHAT_TYPE];
  return type === 'group' || type === 'supergroup';
}

/** The bot's numeric id is the part of the token before ':' (public, not a secret). */
export function botIdOf(token: string): string {
  return token.split(':')[0] ?? 'bot';
}
