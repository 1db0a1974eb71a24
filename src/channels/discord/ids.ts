import { createHash, randomBytes } from 'node:crypto';
import { RedisKeys } from '../../queue/keys.js';
import type { InboundMessage } from '../types.js';

/** 2015-01-01T00:00:00Z: snowflakes count milliseconds from here. */
export const DISCORD_EPOCH = 1_420_070_400_000;

/** An interaction token is valid for 15 minutes; stop using it a little before. */
export const INTERACTION_TOKEN_MS = 15 * 60_000;
const TOKEN_MARGIN_MS = 30_000;

/** Marks a status message that is the interaction's deferred response rather than a channel message. */
export const ORIGINAL = '@original';

export const MESSAGE_LIMIT = 2_000;

/**
 * The largest file a bot may upload: Discord's default per-file limit, 10 MiB since January 2025
 * for users, bots, webhooks and interaction responses alike (Reference → Uploading Files). A
 * boosted server allows more; the floor holds everywhere.
 */
export const UPLOAD_MAX_BYTES = 10 * 1024 * 1024;

/** When a snowflake (a message or interaction id) was made, ms since the epoch. */
export function snowflakeTime(id: string): number {
  return Number(BigInt(id) >> 22n) + DISCORD_EPOCH;
}

/** Our message id for a Discord message or interaction. */
export function messageIdOf(snowflake: string): string {
  return `discord-${snowflake}`;
}

/** What the outbound half needs to answer a slash command through its interaction webhook. */
export interface InteractionRef {
  id: string;
  token: string;
  applicationId: string;
  /** The user who ran the command (named when the answer has to go to the channel instead). */
  userId: string;
}

/** Keys of `InboundMessage.meta` for a slash command. */
export function interactionMeta(ref: InteractionRef): Record<string, string> {
  return { interactionToken: ref.token, applicationId: ref.applicationId, userId: ref.userId };
}

export function interactionOf(message: InboundMessage): InteractionRef | undefined {
  const meta = message.meta;
  if (!meta?.interactionToken || !meta.applicationId || !meta.userId) return undefined;
  return { id: message.eventId, token: meta.interactionToken, applicationId: meta.applicationId, userId: meta.userId };
}

/** How much longer the interaction's token is valid at `now`, ms (0 or less: it has expired). */
export function tokenLifeLeftMs(ref: Pick<InteractionRef, 'id'>, now: number): number {
  return snowflakeTime(ref.id) + INTERACTION_TOKEN_MS - now;
}

/** The interaction's token can still be used at `now` (it lives 15 minutes from the interaction). */
export function tokenAlive(ref: Pick<InteractionRef, 'id'>, now: number): boolean {
  return now < snowflakeTime(ref.id) + INTERACTION_TOKEN_MS - TOKEN_MARGIN_MS;
}

/**
 * The nonce of one message piece: the same piece of the same reply always gets the same nonce,
 * so with `enforce_nonce` a resent POST (a lost response, a redelivered reply) returns the
 * message that already exists instead of posting it twice. Discord allows 25 characters.
 */
export function pieceNonce(to: Pick<InboundMessage, 'id'>, kind: string, index: number): string {
  return createHash('sha256').update(`${to.id}\n${kind}\n${index}`).digest('base64url').slice(0, 25);
}

/**
 * The nonce of one upload: its retries share it (with `enforce_nonce` a resend after a lost
 * response returns the message already made), yet a second send_file of the same file in the
 * same turn is a message of its own. A resumed run never uploads again: the journal sees to that.
 */
export function uploadNonce(): string {
  return randomBytes(18).toString('base64url');
}

/** The nonce of an approval card: one per approval, so a resent card (a lost response, a retried job) is not posted twice. */
export function cardNonce(approvalId: string): string {
  return createHash('sha256').update(`approval-card\n${approvalId}`).digest('base64url').slice(0, 25);
}

/** Redis key of a slash command's interaction (for answering it when its turn was folded into a later one). */
export function interactionKey(prefix: string, messageId: string): string {
  return new RedisKeys(prefix).discordInteraction(messageId);
}
