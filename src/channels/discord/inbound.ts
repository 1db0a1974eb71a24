import type { Attachment, InboundMessage } from '../types.js';
import { interactionMeta, messageIdOf } from './ids.js';

/**
 * Discord events as plain data (views.ts builds them from discord.js objects), and the pure
 * rules that turn them into normalised messages: who may start a run, the text without the bot
 * mention, the session (a guild channel or thread is one; a DM channel is one per user; a slash
 * command joins the session of the channel it was used in).
 */

export interface MessageView {
  id: string;
  /** The channel or thread the message was sent in (for a DM, the DM channel). */
  channelId: string;
  /** Absent in DMs. */
  guildId?: string;
  /** A thread's parent channel (an ALLOWED_CHANNELS entry naming the channel covers its threads). */
  parentId?: string;
  author: { id: string; name: string; bot: boolean };
  content: string;
  /** A join, pin or other system message. */
  system: boolean;
  /** Sent by a webhook. */
  webhook: boolean;
  mentionedUserIds: string[];
  mentionedRoleIds: string[];
  /** The author of the message this one replies to. */
  repliedToUserId?: string;
  attachments: { name: string; url: string; size: number; contentType?: string }[];
  /** Display names of mentioned users, to show `<@id>` as `@name` to the model. */
  userNames: Record<string, string>;
}

export interface BotIdentity {
  id: string;
  /** The bot's managed role in this guild: some clients insert it when the user picks the bot from the @ list. */
  roleId?: string;
}

export type IgnoredReason = 'own' | 'bot' | 'system' | 'not_addressed' | 'empty';

export type MessageGate = { ok: true; message: InboundMessage } | { ok: false; reason: IgnoredReason };

/** A guild message starts a run when it mentions the bot or replies to one of its messages; a DM always does. */
export function normaliseMessage(view: MessageView, bot: BotIdentity, now: number): MessageGate {
  if (view.author.id === bot.id) return { ok: false, reason: 'own' };
  if (view.author.bot || view.webhook) return { ok: false, reason: 'bot' };
  if (view.system) return { ok: false, reason: 'system' };
  const addressed =
    view.guildId === undefined ||
    view.mentionedUserIds.includes(bot.id) ||
    (bot.roleId !== undefined && view.mentionedRoleIds.includes(bot.roleId)) ||
    view.repliedToUserId === bot.id;
  if (!addressed) return { ok: false, reason: 'not_addressed' };
  const text = cleanText(view.content, bot, view.userNames);
  if (!text && view.attachments.length === 0) return { ok: false, reason: 'empty' };
  const attachments: Attachment[] = view.attachments.map((a) => ({ name: a.name, ref: a.url, size: a.size, ...(a.contentType && { mime: a.contentType }) }));
  return {
    ok: true,
    message: {
      v: 1,
      id: messageIdOf(view.id),
      platform: 'discord',
      conversation: view.channelId,
      sender: { id: view.author.id, name: view.author.name },
      where: whereOf(view),
      text,
      attachments,
      eventId: view.id,
      receivedAt: now,
      replyTo: view.id,
      meta: view.guildId === undefined ? { dm: '1' } : { guildId: view.guildId },
    },
  };
}

/** A DM, or a guild channel named by itself, its parent channel (a thread) and its guild. */
export function whereOf(view: { channelId: string; guildId?: string; parentId?: string }): NonNullable<InboundMessage['where']> {
  if (view.guildId === undefined) return { kind: 'dm' };
  return { kind: 'group', ids: [view.channelId, ...(view.parentId !== undefined ? [view.parentId] : []), view.guildId] };
}

/** The text without the bot's own mention (user or managed role); other users' mentions read as @name. */
export function cleanText(content: string, bot: BotIdentity, userNames: Record<string, string> = {}): string {
  let text = content.replace(new RegExp(`<@!?${bot.id}>`, 'g'), ' ');
  if (bot.roleId) text = text.replace(new RegExp(`<@&${bot.roleId}>`, 'g'), ' ');
  text = text.replace(/<@!?(\d+)>/g, (whole, id: string) => (userNames[id] ? `@${userNames[id]}` : whole));
  return text
    .replace(/[ \t]{2,}/g, ' ')
    .replace(/^[ \t]+|[ \t]+$/gm, '')
    .trim();
}

export interface CommandView {
  /** The interaction id. */
  id: string;
  token: string;
  applicationId: string;
  name: string;
  /** /ask's prompt option. */
  prompt?: string;
  /** A chat command's argument (/unschedule's id). */
  args?: string;
  channelId: string;
  guildId?: string;
  parentId?: string;
  user: { id: string; name: string };
}

/** The session a slash command belongs to: its channel's (or DM's). */
export function commandSession(view: Pick<CommandView, 'channelId'>): { platform: 'discord'; conversation: string } {
  return { platform: 'discord', conversation: view.channelId };
}

/**
 * A slash command as a normalised message answered through the interaction's webhook: /ask is
 * its prompt, the chat commands are their text (`/reset`, `/stop`, …), which the intake acts on
 * or queues in order with the session's messages.
 */
export function normaliseCommand(view: CommandView, now: number): InboundMessage {
  const text = view.name === 'ask' ? (view.prompt ?? '').trim() : `/${view.name}${view.args?.trim() ? ` ${view.args.trim()}` : ''}`;
  return {
    v: 1,
    id: messageIdOf(view.id),
    ...commandSession(view),
    sender: { id: view.user.id, name: view.user.name },
    where: whereOf(view),
    text,
    attachments: [],
    eventId: view.id,
    receivedAt: now,
    // A chat command's answer is ephemeral (only the user sees it); /ask's is posted for the channel.
    ...(view.name !== 'ask' && { privateReply: true as const }),
    meta: {
      ...interactionMeta({ id: view.id, token: view.token, applicationId: view.applicationId, userId: view.user.id }),
      ...(view.guildId && { guildId: view.guildId }),
    },
  };
}
