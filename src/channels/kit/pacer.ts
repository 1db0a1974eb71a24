import { sleep } from '../../lib/sleep.js';

/**
 * One write budget per conversation, so progress never costs the final answer and no write
 * trips the platform's flood control (which counts per conversation, across its threads):
 * - writes of one conversation are at least its gap apart, whatever they are (status, stream, final pieces, cards, files);
 * - after a 429 the conversation is "flooded" until the platform's wait has passed;
 * - a write that must happen waits for its turn (`turn`, one at a time, in the order asked);
 *   a best-effort one asks `waitMs` and, when not yet, is deferred (`defer`: the newest text wins)
 *   or left for the next stream write instead of blocking the run.
 */
export class ConversationPacer {
  private readonly conversations = new Map<string, State>();

  private readonly gapOf: (conversation: string) => number;

  constructor(
    minGap: number | ((conversation: string) => number),
    private readonly now: () => number = Date.now,
  ) {
    this.gapOf = typeof minGap === 'number' ? () => minGap : minGap;
  }

  /** The least time between two writes in this conversation. */
  gapMs(conversation: string): number {
    return this.gapOf(conversation);
  }

  /** The platform said 429 for this conversation: nothing more until `waitMs` from now. */
  flood(conversation: string, waitMs: number): void {
    const state = this.state(conversation);
    state.floodUntil = Math.max(state.floodUntil, this.now() + waitMs);
  }

  /** How long until a flood wait ends (0: none); calls that are not message writes (typing) need only this. */
  floodWaitMs(conversation: string): number {
    return Math.max(0, (this.conversations.get(conversation)?.floodUntil ?? 0) - this.now());
  }

  /** How long a write must wait now: the flood wait, the gap since the last write, or a gap when writes are queued for their turn. */
  waitMs(conversation: string): number {
    const state = this.conversations.get(conversation);
    if (!state) return 0;
    return Math.max(this.freeInMs(conversation, state), state.queued > 0 ? this.gapOf(conversation) : 0);
  }

  /** A write is made now (by a caller that checked `waitMs`). */
  wrote(conversation: string): void {
    this.state(conversation).lastWriteAt = this.now();
  }

  /**
   * A write that rides on the one just made (a placeholder's edit into its piece, see pieces.ts):
   * it goes at once, and the write after it waits one gap more, so the pair still costs two gaps
   * of the budget. The platforms' per-conversation limits are averages that allow a short burst
   * (Telegram: "we may allow short bursts"); without this, every piece's words would show a gap
   * (1.1 s in a Telegram DM, 3.1 s in a group) after its placeholder. False (take a `turn`
   * instead) while the conversation is flooded.
   */
  rideOn(conversation: string): boolean {
    if (this.floodWaitMs(conversation) > 0) return false;
    const state = this.state(conversation);
    // Counted as made a gap after the write it rides on (or now, if that was longer ago).
    state.lastWriteAt = Math.max(state.lastWriteAt + this.gapOf(conversation), this.now());
    return true;
  }

  /**
   * Resolves when this write may go, counted as made: after the writes queued before it, the gap
   * and any flood wait (at most `maxWaitMs`, then it goes anyway and the platform decides).
   */
  turn(conversation: string, maxWaitMs: number, signal?: AbortSignal): Promise<void> {
    const state = this.state(conversation);
    state.queued++;
    const mine = state.tail.then(async () => {
      const wait = this.freeInMs(conversation, state);
      if (wait > 0) await sleep(Math.min(wait, maxWaitMs), signal);
      this.wrote(conversation);
    });
    state.tail = mine.finally(() => state.queued--);
    return state.tail;
  }

  /**
   * Applies `apply(text)` to the message after `waitMs` with the newest text deferred for it
   * by then. A deferral already pending for the message keeps its timer and takes the new text.
   */
  defer(conversation: string, messageId: string, text: string, waitMs: number, apply: (text: string) => void): void {
    const state = this.state(conversation);
    const pending = state.pending.get(messageId);
    if (pending) {
      pending.text = text;
      return;
    }
    const entry: Deferred = {
      text,
      timer: setTimeout(
        () => {
          state.pending.delete(messageId);
          apply(entry.text);
        },
        Math.max(1, waitMs),
      ),
    };
    entry.timer.unref();
    state.pending.set(messageId, entry);
  }

  /** Forgets a deferred edit (the message is being deleted). */
  cancel(conversation: string, messageId: string): void {
    const state = this.conversations.get(conversation);
    const pending = state?.pending.get(messageId);
    if (!pending) return;
    clearTimeout(pending.timer);
    state!.pending.delete(messageId);
  }

  /** Deferred edits not yet applied (for tests and shutdown). */
  pendingCount(): number {
    let n = 0;
    for (const state of this.conversations.values()) n += state.pending.size;
    return n;
  }

  private freeInMs(conversation: string, state: State): number {
    const now = this.now();
    return Math.max(0, state.floodUntil - now, state.lastWriteAt + this.gapOf(conversation) - now);
  }

  private state(conversation: string): State {
    let state = this.conversations.get(conversation);
    if (!state) {
      if (this.conversations.size >= MAX_IDLE_CONVERSATIONS) this.prune();
      state = { floodUntil: 0, lastWriteAt: -Infinity, pending: new Map(), queued: 0, tail: Promise.resolve() };
      this.conversations.set(conversation, state);
    }
    return state;
  }

  /** Drops conversations with nothing pending and no wait left, so the map stays small in a long-lived worker. */
  private prune(): void {
    for (const [id, state] of this.conversations) {
      if (state.pending.size === 0 && state.queued === 0 && this.freeInMs(id, state) === 0) this.conversations.delete(id);
    }
  }
}

const MAX_IDLE_CONVERSATIONS = 1_000;

interface Deferred {
  text: string;
  timer: NodeJS.Timeout;
}

interface State {
  floodUntil: number;
  lastWriteAt: number;
  pending: Map<string, Deferred>;
  /** Writes waiting in `turn`, this one included until it is let go. */
  queued: number;
  /** The last queued write's turn: the next waits for it. */
  tail: Promise<void>;
}
