import { cutAt } from '../../lib/text.js';
import type { InboundMessage, StreamShown } from '../types.js';
import type { CallOptions } from './api.js';
import { SlackRateLimited, SlackRefused, SlackUnknownOutcome } from './errors.js';
import { escapePlain } from './format.js';
import { isDirect } from './ids.js';
import type { SlackWriter } from './writer.js';

/**
 * A streamed answer in Slack. In a thread whose recipient is known, each message is one native
 * stream (chat.startStream, then chat.appendStream with only the new text: the API is
 * append-only, Tier 4); elsewhere, or when Slack refuses streaming, the message is posted and
 * rewritten whole with chat.update (Tier 3). A message switches to chat.update when its stream
 * ended (Slack ends one by itself after some minutes) or when the new text no longer starts with
 * what was appended (a retried model call): the whole text so far replaces it, so nothing is
 * lost or shown twice.
 */

export { STREAM_INTERVAL_MS } from './writer.js';
/**
 * Characters of (escaped) text per streamed message. Matches the Markdown cut of slackPieces, so
 * the final answer usually needs the same messages; below chat.update's recommended 4,000 with
 * room for the /ask line, and far below appendStream's 12,000 per call.
 */
export const STREAM_SEGMENT_LIMIT = 3_500;
/** Ends a message rewritten with chat.update while it is still being written (a native stream shows its own). */
export const STILL_WRITING = ' …';

/** Slack has no streaming for this token or workspace: every conversation uses chat.update. */
const STREAMING_UNAVAILABLE = new Set(['unknown_method', 'not_allowed_token_type', 'method_deprecated', 'deprecated_endpoint']);
/** This conversation cannot stream (a recipient Slack wants and we lack, a channel type it does not stream to). */
const STREAMING_NOT_HERE = new Set(['missing_recipient_team_id', 'missing_recipient_user_id', 'channel_type_not_supported']);
/** The message is no longer a stream (ended by Slack, or by another worker): only chat.update changes it now. */
const STREAM_OVER = 'message_not_in_streaming_state';
/** chat.update (or chat.delete) of a message whose stream is still open. */
const STILL_STREAMING = 'streaming_state_conflict';

/** One try, no waiting: a stream write that cannot go now is left to the next call, which brings newer text. */
const NOW: CallOptions = { idempotent: false, attempts: 1 };
const NOW_REPEATABLE: CallOptions = { idempotent: true, attempts: 1 };
/** The final delivery may wait out a 429 and repeat what can be repeated (slackCall's defaults). */
const FINAL: CallOptions = { idempotent: true };

/** What this worker knows of one streamed message. */
interface MessageState {
  /** 'stream': the text so far was appended to a native stream; 'update': the message is rewritten whole. */
  mode: 'stream' | 'update';
  /** The model's text this message shows (before escaping). */
  raw: string;
  /** What the message shows now (StreamShown.texts). */
  shown: string;
  /** Its native stream is open (true), stopped (false), or not known (a message another worker streamed). */
  open: boolean | 'unknown';
}

/** Message states kept per worker; a bound so a run that never finished does not hold memory for good. */
const MAX_STATES = 1_000;

export class SlackStreams {
  private readonly states = new Map<string, MessageState>();
  private readonly noStream = new Set<string>();
  private unavailable = false;

  constructor(
    /** Every write goes through it (its client, its log, the conversation's pacer). */
    private readonly w: SlackWriter,
    /**
     * Native streams allowed (LINK_PREVIEWS=1 only): chat.startStream takes no unfurl arguments,
     * so a link in a streamed answer could be fetched for a preview; a message posted with unfurls
     * off and then rewritten (chat.update) never unfurls.
     */
    private readonly native = true,
  ) {}

  /**
   * Shows `text` in the messages of `shown` (see OutboundAdapter.streamAnswer). `prefix` leads the
   * first message (the /ask line). Each write waits for the conversation's turn (the caller
   * already keeps the interval, so that is rarely a wait). A 429 ends the call with what is shown
   * by then and holds the conversation for its Retry-After, during which nothing is written; other errors are thrown.
   */
  async show(to: InboundMessage, text: string, shown: StreamShown, prefix: string): Promise<StreamShown> {
    if (this.w.floodWaitMs(to.conversation) > 0) return shown;
    const ids = [...shown.ids];
    const states = ids.map((id, i) => this.stateOf(to, id, shown.texts[i] ?? '', i === 0 ? prefix : ''));
    const segments = segmentText(
      text,
      states.slice(0, -1).map((s) => s.raw),
    );
    if (segments.length === 0) return shown;
    try {
      for (const [i, segment] of segments.entries()) {
        const last = i === segments.length - 1;
        const lead = i === 0 ? prefix : '';
        const id = ids[i];
        if (id !== undefined) {
          await this.rewrite(to, id, states[i]!, segment, last, lead);
        } else {
          const opened = await this.open(to, segment, last, lead);
          ids.push(opened.id);
          states.push(opened.state);
        }
        // A message the text has passed is sealed: its stream ends and it no longer changes.
        if (!last && states[i]!.open === true) await this.stop(to, ids[i]!, states[i]!, NOW_REPEATABLE);
      }
      while (ids.length > segments.length) {
        await this.discard(to, ids.at(-1)!, states.at(-1)!, NOW_REPEATABLE);
        ids.pop();
        states.pop();
      }
    } catch (err) {
      if (err instanceof SlackRateLimited) {
        this.w.log.debug({ channel: to.conversation, retryAfterMs: err.retryAfterMs }, 'streaming paused by a 429');
      } else if (sameIds(ids, shown.ids)) {
        throw err;
      } else {
        // A message was posted or deleted before the failure: the caller must learn it (a message it
        // does not know would keep its text beside the final answer), so this call returns what is shown.
        this.w.log.warn({ err, channel: to.conversation }, 'a stream write failed after the messages changed');
      }
    }
    return { ids, texts: states.map((s) => s.shown) };
  }

  /** Ends the native streams still open among `ids` (before they are edited into the final answer). */
  async stopAll(to: InboundMessage, ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      const state = this.states.get(key(to, id));
      if (state?.open !== true) continue;
      await this.stop(to, id, state, FINAL);
    }
  }

  /** The final text of a streamed message (chat.update, which may wait out a 429). */
  async replace(to: InboundMessage, ts: string, text: string): Promise<void> {
    await this.whenNotStreaming(to, ts, 'chat.update', FINAL, () => this.w.client.chat.update({ channel: to.conversation, ts, text }));
  }

  /** Deletes a streamed message the final answer does not need; one already gone counts as deleted. */
  async delete(to: InboundMessage, ts: string): Promise<void> {
    const state = this.states.get(key(to, ts));
    await this.discard(to, ts, state ?? { mode: 'update', raw: '', shown: '', open: 'unknown' }, FINAL);
  }

  /** The answer is final: this worker no longer needs to know its messages. */
  forget(to: InboundMessage, ids: readonly string[]): void {
    for (const id of ids) this.states.delete(key(to, id));
  }

  /** Puts `segment` into an existing message: the new part appended to its stream, else the whole text rewritten. */
  private async rewrite(to: InboundMessage, ts: string, state: MessageState, segment: string, last: boolean, lead: string): Promise<void> {
    if (state.mode === 'stream' && segment === state.raw) return;
    if (state.mode === 'stream' && state.open === true && segment.startsWith(state.raw)) {
      if (await this.append(to, ts, state, segment)) return;
    }
    const text = updateText(segment, last, lead);
    if (state.mode === 'update' && text === state.shown) return;
    // chat.update answers streaming_state_conflict while the stream is open.
    if (state.open === true) await this.stop(to, ts, state, NOW_REPEATABLE);
    await this.whenNotStreaming(to, ts, 'chat.update', NOW_REPEATABLE, () => this.w.client.chat.update({ channel: to.conversation, ts, text }));
    Object.assign(state, { mode: 'update', raw: segment, shown: text, open: false } satisfies MessageState);
  }

  /** Appends what `segment` adds to the stream; false when the stream is over (the caller rewrites the message). */
  private async append(to: InboundMessage, ts: string, state: MessageState, segment: string): Promise<boolean> {
    const added = segment.slice(state.raw.length);
    try {
      await this.call(to, 'chat.appendStream', () => this.w.client.chat.appendStream({ channel: to.conversation, ts, markdown_text: escapePlain(added) }), NOW);
    } catch (err) {
      if (err instanceof SlackRefused && err.code === STREAM_OVER) {
        this.w.log.info({ channel: to.conversation, ts }, 'the stream ended; the message goes on with chat.update');
        state.open = false;
        return false;
      }
      // Appended or not, nobody knows: the next write replaces the whole text instead of appending again.
      if (err instanceof SlackUnknownOutcome) Object.assign(state, { mode: 'update', open: 'unknown' } satisfies Partial<MessageState>);
      throw err;
    }
    state.raw = segment;
    state.shown = escapePlain(segment);
    return true;
  }

  /** Posts a new message for `segment`: a native stream where one can go, else a plain message rewritten later. */
  private async open(to: InboundMessage, segment: string, last: boolean, lead: string): Promise<{ id: string; state: MessageState }> {
    const thread = this.streamThread(to, lead);
    if (thread !== undefined) {
      try {
        const res = await this.call(
          to,
          'chat.startStream',
          () => this.w.client.chat.startStream({ channel: to.conversation, thread_ts: thread, markdown_text: escapePlain(segment), ...recipient(to) }),
          NOW,
        );
        if (!res.ts) throw new SlackRefused('chat.startStream', 'no_ts_in_response');
        return { id: res.ts, state: this.remember(to, res.ts, { mode: 'stream', raw: segment, shown: escapePlain(segment), open: true }) };
      } catch (err) {
        if (!(err instanceof SlackRefused && this.refuseStreaming(to, err.code))) throw err;
      }
    }
    const text = updateText(segment, last, lead);
    // A stream write never waits: one try, and a 429 leaves the text for the next write.
    const id = await this.w.postMessage(to, text, 'answer', {}, { attempts: 1 });
    return { id, state: this.remember(to, id, { mode: 'update', raw: segment, shown: text, open: false }) };
  }

  /** Notes a refusal that means "no streaming here"; false for any other refusal (thrown by the caller). */
  private refuseStreaming(to: InboundMessage, code: string): boolean {
    if (STREAMING_UNAVAILABLE.has(code)) this.unavailable = true;
    else if (STREAMING_NOT_HERE.has(code)) remember(this.noStream, to.conversation);
    else return false;
    this.w.log.info({ channel: to.conversation, code }, 'Slack refused a native stream; the answer is streamed with chat.update');
    return true;
  }

  /**
   * The thread a native stream may start in, or undefined: streams are replies in a thread
   * (thread_ts is required), outside a DM only to a known recipient (user and team); and an
   * answer that starts with the /ask line is a plain message.
   */
  private streamThread(to: InboundMessage, lead: string): string | undefined {
    if (!this.native || this.unavailable || lead || to.thread === undefined || this.noStream.has(to.conversation)) return undefined;
    if (!isDirect(to.conversation) && recipient(to).recipient_team_id === undefined) return undefined;
    return to.thread;
  }

  private async stop(to: InboundMessage, ts: string, state: MessageState, options: CallOptions): Promise<void> {
    try {
      await this.call(to, 'chat.stopStream', () => this.w.client.chat.stopStream({ channel: to.conversation, ts }), options);
    } catch (err) {
      if (!(err instanceof SlackRefused && err.code === STREAM_OVER)) throw err;
    }
    state.open = false;
  }

  private async discard(to: InboundMessage, ts: string, state: MessageState, options: CallOptions): Promise<void> {
    if (state.open === true) await this.stop(to, ts, state, options);
    try {
      await this.whenNotStreaming(to, ts, 'chat.delete', options, () => this.w.client.chat.delete({ channel: to.conversation, ts }));
    } catch (err) {
      if (!(err instanceof SlackRefused && err.code === 'message_not_found')) throw err;
    }
    this.states.delete(key(to, ts));
  }

  /** Runs a write of the message; when Slack says it is still streaming (another worker's stream), stops that stream and runs it again. */
  private async whenNotStreaming(to: InboundMessage, ts: string, method: string, options: CallOptions, write: () => Promise<unknown>): Promise<void> {
    try {
      await this.call(to, method, write, options);
    } catch (err) {
      if (!(err instanceof SlackRefused && err.code === STILL_STREAMING)) throw err;
      await this.stop(to, ts, { mode: 'update', raw: '', shown: '', open: true }, options);
      await this.call(to, method, write, options);
    }
  }

  /** Every write of a streamed message, on the conversation's turn. */
  private call<T>(to: InboundMessage, method: string, write: () => Promise<T>, options: CallOptions): Promise<T> {
    return this.w.write(to.conversation, method, write, options);
  }

  /** This worker's state of a message, or one read back from what it shows (a run another worker streamed). */
  private stateOf(to: InboundMessage, ts: string, shown: string, lead: string): MessageState {
    const known = this.states.get(key(to, ts));
    if (known) return known;
    let text = lead && shown.startsWith(lead) ? shown.slice(lead.length) : shown;
    if (text.endsWith(STILL_WRITING)) text = text.slice(0, -STILL_WRITING.length);
    return this.remember(to, ts, { mode: 'update', raw: unescapePlain(text), shown, open: 'unknown' });
  }

  private remember(to: InboundMessage, ts: string, state: MessageState): MessageState {
    const k = key(to, ts);
    this.states.delete(k);
    this.states.set(k, state);
    if (this.states.size > MAX_STATES) this.states.delete(this.states.keys().next().value!);
    return state;
  }
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

function key(to: InboundMessage, ts: string): string {
  return `${to.conversation}:${ts}`;
}

function remember(set: Set<string>, value: string): void {
  set.add(value);
  if (set.size > MAX_STATES) set.delete(set.values().next().value!);
}

/**
 * Who a stream outside a DM is for: the user who asked and their team. The team comes from
 * `meta.team` (the event's user_team or team); without it a channel answer streams by chat.update.
 */
function recipient(to: InboundMessage): { recipient_user_id?: string; recipient_team_id?: string } {
  const team = to.meta?.team;
  return team ? { recipient_user_id: to.sender.id, recipient_team_id: team } : {};
}

/** A message rewritten with chat.update while the answer is written: plain (escaped, so nothing pings), marked when it is the last. */
function updateText(segment: string, last: boolean, lead: string): string {
  return `${lead}${escapePlain(segment)}${last ? STILL_WRITING : ''}`;
}

export function unescapePlain(text: string): string {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** Length of `text` once escaped for Slack (`&`, `<`, `>` become entities). */
function escapedLength(text: string): number {
  let n = text.length;
  for (const c of text)
    if (c === '&') n += 4;
    else if (c === '<' || c === '>') n += 3;
  return n;
}

/**
 * The answer so far cut into the texts of its messages. Messages before the last keep their
 * text while the answer still starts with it and goes on after it (they are sealed); the rest is
 * cut at STREAM_SEGMENT_LIMIT, on a paragraph, a line, or a space. Concatenated, the segments
 * are the answer (less trailing blank text not shown yet).
 */
export function segmentText(text: string, sealed: readonly string[], limit = STREAM_SEGMENT_LIMIT): string[] {
  const segments: string[] = [];
  let rest = text;
  for (const s of sealed) {
    if (!s || !rest.startsWith(s) || !rest.slice(s.length).trim()) break;
    segments.push(s);
    rest = rest.slice(s.length);
  }
  while (escapedLength(rest) > limit) {
    const cut = cutPoint(rest, limit);
    segments.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.trim()) segments.push(rest);
  return segments;
}

/** Where to end a message: the last paragraph, line or space in the second half of what fits, else hard (never inside a surrogate pair). */
function cutPoint(text: string, limit: number): number {
  let fits = 0;
  for (let used = 0; fits < text.length; fits++) {
    used += escapedLength(text[fits]!);
    if (used > limit) break;
  }
  const window = text.slice(0, fits);
  for (const sep of ['\n\n', '\n', ' ']) {
    const at = window.lastIndexOf(sep);
    if (at >= Math.floor(fits / 2)) return at + sep.length;
  }
  return cutAt(text, fits).length;
}
