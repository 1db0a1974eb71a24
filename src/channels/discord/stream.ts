import { createHash, randomBytes } from 'node:crypto';
import { splitMessage } from '../kit/chunk.js';
import type { InboundMessage } from '../types.js';
import { toDiscordMarkdown } from './format.js';
import { MESSAGE_LIMIT, ORIGINAL } from './ids.js';

/**
 * The pure half of a streamed answer on Discord: how the text is laid out in messages while it
 * is written and once it is final, how a streamed message is named, and the pacing of writes.
 * outbound.ts does the writing.
 */

/**
 * Least time between two writes of a streamed answer in one channel. Discord publishes no
 * numbers (Topics → Rate Limits: "should not be hard coded", read the X-RateLimit headers);
 * observed per-channel message limits are about 5 writes per 5 s, shared with the status
 * message's edits, so one write every 1.2 s leaves room for those.
 */
export const STREAM_INTERVAL_MS = 1_200;

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

const EVERYWHERE = '*';

/**
 * When a conversation may be written again: STREAM_INTERVAL_MS after its last streamed write,
 * and not before a 429's retry-after (a global 429 holds every conversation). In memory: it only
 * spaces the writes of the worker that streams.
 */
export class StreamPacing {
  private readonly last = new Map<string, number>();
  private readonly until = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  /** How long until the conversation may be written; `edit`: a stream that has messages (a first post waits only for a 429). */
  waitMs(key: string, edit: boolean): number {
    const now = this.now();
    const held = Math.max(this.until.get(key) ?? 0, this.until.get(EVERYWHERE) ?? 0) - now;
    const paced = edit ? (this.last.get(key) ?? -Infinity) + STREAM_INTERVAL_MS - now : 0;
    return Math.max(0, held, paced);
  }

  wrote(key: string): void {
    this.tidy();
    this.last.set(key, this.now());
  }

  limited(key: string, retryAfterMs: number, global: boolean): void {
    this.until.set(global ? EVERYWHERE : key, this.now() + retryAfterMs);
  }

  /** Forgets conversations that may be written anyway, so a long-lived worker does not keep them all. */
  private tidy(): void {
    if (this.last.size + this.until.size < 1_000) return;
    const now = this.now();
    for (const [key, at] of this.last) if (at + STREAM_INTERVAL_MS <= now) this.last.delete(key);
    for (const [key, at] of this.until) if (at <= now) this.until.delete(key);
  }
}
