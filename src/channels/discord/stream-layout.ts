import { createHash, randomBytes } from 'node:crypto';
import { splitMessage } from '../kit/chunk.js';
import type { InboundMessage } from '../types.js';
import { toDiscordMarkdown } from './format.js';
import { MESSAGE_LIMIT, ORIGINAL } from './ids.js';

/**
 * The pure half of a streamed answer on Discord: how the text is laid out in messages while it
 * is written and once it is final, and how a streamed message is named. stream.ts does the writing.
 */

/** Shown after the text while it is still being written. */
export const WRITING_MARK = '…';

const FENCE_CLOSE = '\n```';

/**
 * Where a streamed message is, so it can be edited and removed after a worker restart or once the
 * interaction's token has gone: the interaction's original response (PATCH …/messages/@original
 * while the token is valid, else the channel's Edit Message with its real id), one of its
 * follow-ups (…/messages/{id}, else the channel), or a channel message.
 */
export interface StreamedMessage {
  where: 'original' | 'followup' | 'channel';
  /** The message's snowflake; absent only for a bare ORIGINAL whose id was never learnt. */
  id?: string;
}

const FOLLOWUP = '@followup';

/** The id a streamed message has in `StreamShown.ids`. */
export function streamedId(m: StreamedMessage): string {
  if (m.where === 'original') return m.id ? `${ORIGINAL}:${m.id}` : ORIGINAL;
  return m.where === 'followup' ? `${FOLLOWUP}:${m.id}` : m.id!;
}

/** The id `post` would return for it (the ledger and the delivery report use those). */
export function postedId(m: StreamedMessage): string {
  return m.where === 'original' ? ORIGINAL : m.id!;
}

export function parseStreamed(id: string): StreamedMessage {
  if (id === ORIGINAL) return { where: 'original' };
  if (id.startsWith(`${ORIGINAL}:`)) return { where: 'original', id: id.slice(ORIGINAL.length + 1) };
  if (id.startsWith(`${FOLLOWUP}:`)) return { where: 'followup', id: id.slice(FOLLOWUP.length + 1) };
  return { where: 'channel', id };
}

/** Whether an id names a message of a streamed answer (as opposed to a status message or a posted piece). */
export function isStreamedId(id: string): boolean {
  return id.startsWith(`${ORIGINAL}:`) || id.startsWith(`${FOLLOWUP}:`);
}

/**
 * The final answer's messages, exactly as `post` makes them: Discord Markdown split at 2,000
 * characters; in the channel for a slash command whose interaction is gone, every piece leaves
 * room for the line naming the user, which the first one starts with.
 */
export function finalLayout(text: string, mention: string): string[] {
  const pieces = splitMessage(toDiscordMarkdown(text), MESSAGE_LIMIT - mention.length);
  if (pieces.length > 0) pieces[0] = `${mention}${pieces[0]}`;
  return pieces;
}

/**
 * The answer so far, as the messages show it while it is written: split exactly as the final
 * answer will be (so the streamed messages are the final ones, and a message stops changing once
 * the text has gone past it), the last one closing a code block the model has not closed yet and
 * marked as still being written when there is room. Nothing in it pings: every write carries
 * `allowed_mentions`.
 */
export function streamLayout(text: string, mention: string): string[] {
  const pieces = finalLayout(text, mention);
  const last = pieces.length - 1;
  if (last >= 0) pieces[last] = stillWriting(pieces[last]!);
  return pieces;
}

function stillWriting(piece: string): string {
  // An unclosed fence would show its backticks and run into the mark; closed, the code shows as code.
  const closed = endsInFence(piece) ? `${piece}${FENCE_CLOSE}` : piece;
  const marked = `${closed}${closed.endsWith('```') ? '\n' : ' '}${WRITING_MARK}`;
  if (marked.length <= MESSAGE_LIMIT) return marked;
  return closed.length <= MESSAGE_LIMIT ? closed : piece;
}

/** The text ends inside a code block (a fence line opened and not closed), as splitMessage counts fences. */
function endsInFence(text: string): boolean {
  let open = false;
  for (const line of text.split('\n')) if (/^\s*```/.test(line)) open = !open;
  return open;
}

/**
 * The nonce of a streamed answer's channel message. A message after the first is named by the
 * stream's first message and its index, so a resent POST (a lost response, a resumed delivery)
 * returns the message already made; the first has no such name yet (each step of a turn streams
 * into messages of its own), so its nonce is random and only its own retries share it.
 */
export function streamNonce(to: Pick<InboundMessage, 'id'>, first: string | undefined, index: number): string {
  if (first === undefined) return randomBytes(18).toString('base64url');
  return createHash('sha256').update(`${to.id}\nstream\n${first}\n${index}`).digest('base64url').slice(0, 25);
}
