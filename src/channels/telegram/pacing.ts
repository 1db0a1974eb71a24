/**
 * Per-chat pacing of the status message, so progress never costs the final answer:
 * - edits of one chat are spaced at least its gap apart (Telegram's flood control counts per
 *   chat, across the sessions of its topics, and is stricter in groups);
 * - after a 429 the chat is "flooded" until retry_after has passed: an edit asked for in the
 *   meantime is deferred (the newest text wins) and applied once the wait is over, instead of
 *   blocking the run or being dropped; a post waits for the end of the flood before sending.
 */
export class ChatPacer {
  private readonly chats = new Map<number, ChatState>();

  private readonly gapOf: (chatId: number) => number;

  constructor(
    minEditGap: number | ((chatId: number) => number),
    private readonly now: () => number = Date.now,
  ) {
    this.gapOf = typeof minEditGap === 'number' ? () => minEditGap : minEditGap;
  }

  /** The least time between two edits in this chat. */
  gapMs(chatId: number): number {
    return this.gapOf(chatId);
  }

  /** Telegram said 429 for this chat: nothing more until `waitMs` from now. */
  flood(chatId: number, waitMs: number): void {
    const state = this.state(chatId);
    state.floodUntil = Math.max(state.floodUntil, this.now() + waitMs);
  }

  /** How long a post to this chat must wait for a flood wait to end (0: none). */
  floodWaitMs(chatId: number): number {
    return Math.max(0, (this.chats.get(chatId)?.floodUntil ?? 0) - this.now());
  }

  /** How long an edit in this chat must wait: the flood wait or the gap since the last edit. */
  editWaitMs(chatId: number): number {
    const state = this.chats.get(chatId);
    if (!state) return 0;
    return Math.max(0, state.floodUntil - this.now(), state.lastEditAt + this.gapOf(chatId) - this.now());
  }

  markEdit(chatId: number): void {
    this.state(chatId).lastEditAt = this.now();
  }

  /**
   * Applies `apply(text)` to the message after `waitMs` with the newest text deferred for it
   * by then. A deferral already pending for the message keeps its timer and takes the new text.
   */
  defer(chatId: number, messageId: number, text: string, waitMs: number, apply: (text: string) => void): void {
    const state = this.state(chatId);
    const pending = state.pending.get(messageId);
    if (pending) {
      pending.text = text;
      return;
    }
    const entry: Deferred = { text, timer: setTimeout(() => {
      state.pending.delete(messageId);
      apply(entry.text);
    }, Math.max(1, waitMs)) };
    entry.timer.unref();
    state.pending.set(messageId, entry);
  }

  /** Forgets a deferred edit (the message is being deleted). */
  cancel(chatId: number, messageId: number): void {
    const pending = this.chats.get(chatId)?.pending.get(messageId);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.chats.get(chatId)!.pending.delete(messageId);
  }

  /** Deferred edits not yet applied (for tests and shutdown). */
  pendingCount(): number {
    let n = 0;
    for (const state of this.chats.values()) n += state.pending.size;
    return n;
  }

  private state(chatId: number): ChatState {
    let state = this.chats.get(chatId);
    if (!state) {
      if (this.chats.size >= MAX_IDLE_CHATS) this.prune();
      state = { floodUntil: 0, lastEditAt: -Infinity, pending: new Map() };
      this.chats.set(chatId, state);
    }
    return state;
  }

  /** Drops chats with nothing pending and no wait left, so the map stays small in a long-lived worker. */
  private prune(): void {
    const now = this.now();
    for (const [id, state] of this.chats) {
      if (state.pending.size === 0 && state.floodUntil <= now && state.lastEditAt + this.gapOf(id) <= now) this.chats.delete(id);
    }
  }
}

const MAX_IDLE_CHATS = 1_000;

interface Deferred {
  text: string;
  timer: NodeJS.Timeout;
}

interface ChatState {
  floodUntil: number;
  lastEditAt: number;
  pending: Map<number, Deferred>;
}
