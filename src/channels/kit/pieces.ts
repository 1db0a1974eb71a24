/**
 * A reply goes out as pieces (the platform's length limit), each one platform write. The ledger
 * is what delivery knows of each piece across attempts and workers: the queue keeps it in the
 * turn's journal, so a crash mid-delivery continues with the missing pieces and never posts a
 * confirmed one again.
 */

/** What a failed platform write means for the reply. Each channel maps its errors to one. */
export type WriteFailure =
  /** The platform refused for good (chat not found, bot blocked or removed): the reply can never be delivered. */
  | 'refused'
  /** It may or may not have been performed (timeout, connection lost after sending, 5xx). */
  | 'unknown'
  /** Certainly not performed (a 429 longer than we wait, a request that never left): try again later. */
  | 'retry';

/**
 * posted: the platform confirmed it · placed: its placeholder is posted (placeholder mode), the
 * piece not yet edited in · started: an attempt began and never learned the outcome · unknown: an
 * attempt failed without an outcome · new.
 */
export type PieceState = { posted: string } | { placed: string } | 'started' | 'unknown' | 'new';

/** The platform id of a piece known posted, else undefined. */
export const postedId = (state: PieceState): string | undefined => (typeof state === 'object' && 'posted' in state ? state.posted : undefined);

export interface PieceLedger {
  /** The ledger outlives the process (the turn's journal), so a resuming run reads what this one wrote. */
  readonly durable: boolean;
  state(index: number): PieceState;
  /** Written before the piece is sent. */
  started(index: number): Promise<void>;
  posted(index: number, id: string): Promise<void>;
  /** Placeholder mode: the piece's placeholder was posted with this id; the piece is edited into it next. */
  placed(index: number, id: string): Promise<void>;
  /** `unknown`: nobody knows whether it landed (it is resolved before anything follows it); `retry`: the piece is new again. */
  failed(index: number, how: 'unknown' | 'retry', error: string): Promise<void>;
}

/** A ledger that lives as long as one delivery (for callers without a journal: tests, one-off posts). */
export function memoryLedger(): PieceLedger {
  const states = new Map<number, PieceState>();
  return {
    durable: false,
    state: (i) => states.get(i) ?? 'new',
    started: async (i) => void states.set(i, 'started'),
    posted: async (i, id) => void states.set(i, { posted: id }),
    placed: async (i, id) => void states.set(i, { placed: id }),
    failed: async (i, how) => void (how === 'unknown' ? states.set(i, 'unknown') : states.delete(i)),
  };
}

export interface SendPiecesOptions {
  send(piece: string, index: number): Promise<string>;
  classify(err: unknown): WriteFailure;
  /** The write can be repeated without posting twice (an edit; a Discord message with its nonce). */
  resendable?: (index: number) => boolean;
  /** Ledger index of the first piece (a delivery that moved to another surface mid-way). */
  offset?: number;
  /**
   * Awaited before a piece is marked started: the wait for the conversation's turn belongs before
   * the mark, so a worker that dies while waiting leaves a piece that surely was not sent (`send`
   * then writes at once, its turn taken).
   */
  ready?: (index: number) => Promise<void>;
  /**
   * Finds out whether an earlier attempt whose outcome nobody learnt landed: the message's id when
   * it did, null when it surely did not, undefined when the platform cannot tell.
   */
  find?: (piece: string, index: number) => Promise<string | null | undefined>;
  /** The platform's length limit for one piece: the may-repeat note leads a piece only where it fits. */
  limit?: number;
  /**
   * Placeholder mode, for a platform whose create has no idempotency key and whose messages cannot
   * be looked up (Telegram): with a durable ledger, a new piece is first posted as a short
   * placeholder whose id the ledger keeps, then edited into the piece (an edit can be repeated).
   * A placeholder whose outcome nobody learnt is posted again: one orphan placeholder at worst,
   * never a lost or doubled answer.
   */
  placeholder?: Placeholder;
}

/**
 * What a placeholder shows for the moment between its post and its edit, and what an orphan
 * shows in the rare case a worker dies between posting one and hearing its id: no words, so an
 * orphan never reads as a second answer.
 */
export const PLACEHOLDER = '…';

export interface Placeholder {
  /** Posts the placeholder of piece `index` (a new message: the person's notification): its id. */
  place(index: number): Promise<string>;
  /**
   * Edits the piece into its placeholder; repeating it after it landed changes nothing.
   * `justPlaced`: this delivery posted the placeholder a moment ago (the edit may ride on that
   * write's turn, see ConversationPacer.rideOn); false when it resumes an earlier one's.
   */
  fill(id: string, piece: string, index: number, justPlaced: boolean): Promise<void>;
}

/**
 * Leads a piece sent again when nobody can know whether the earlier attempt landed (a worker died
 * between sending it and hearing back): a possible repeat with a note beats silence.
 */
export const MAY_REPEAT_NOTE = '↻ Sent again: the connection dropped while I was sending this, so you may have it already.\n\n';

/** The piece as sent again without knowing whether the earlier attempt landed: with the note, where it fits. */
export function mayRepeat(piece: string, limit = Infinity): string {
  const noted = `${MAY_REPEAT_NOTE}${piece}`;
  return noted.length <= limit ? noted : piece;
}

/**
 * Posts the pieces in order, through the ledger: a posted piece is skipped (its id kept). A piece
 * whose outcome nobody knows (an earlier attempt interrupted between sending and hearing back, or
 * a write that failed that way now) is never dropped: a resendable write is simply repeated;
 * otherwise the platform is asked whether it landed (`find`), and when it cannot tell, the piece
 * is sent again with the may-repeat note. A refusal, or a failure that may be retried, is thrown
 * to the caller. Returns the ids of the pieces now known posted.
 */
export async function sendPieces(pieces: readonly string[], ledger: PieceLedger, options: SendPiecesOptions): Promise<string[]> {
  const resendable = options.resendable ?? (() => false);
  const ids: string[] = [];
  for (const [k, piece] of pieces.entries()) {
    const i = (options.offset ?? 0) + k;
    const state = ledger.state(i);
    const posted = postedId(state);
    if (posted !== undefined) {
      ids.push(posted);
      continue;
    }
    if (options.placeholder && ledger.durable && !resendable(i)) {
      ids.push(await viaPlaceholder(piece, i, ledger, options, options.placeholder));
      continue;
    }
    let text = piece;
    if ((state === 'started' || state === 'unknown') && !resendable(i)) {
      if (state === 'started') await ledger.failed(i, 'unknown', 'an earlier attempt was interrupted while posting it');
      const found = await resolveUnknown(piece, i, ledger, options);
      if (found.posted !== undefined) {
        ids.push(found.posted);
        continue;
      }
      text = found.text;
    }
    const id = await sendOne(piece, text, i, ledger, options, resendable);
    ids.push(id);
  }
  return ids;
}

/** A piece through its placeholder: placed (again, when the earlier placeholder's outcome is unknown), filled, posted. */
async function viaPlaceholder(piece: string, i: number, ledger: PieceLedger, options: SendPiecesOptions, p: Placeholder): Promise<string> {
  const state = ledger.state(i);
  let id = typeof state === 'object' && 'placed' in state ? state.placed : undefined;
  const justPlaced = id === undefined;
  if (id === undefined) {
    if (state === 'started') await ledger.failed(i, 'unknown', 'an earlier attempt was interrupted while posting its placeholder');
    id = await writeTwice(i, ledger, options, async () => {
      await options.ready?.(i);
      // The mark is also the fence: a worker that froze past its lock is refused here, before it posts anything.
      await ledger.started(i);
      const placed = await p.place(i);
      await ledger.placed(i, placed);
      return placed;
    });
  }
  const filled = id;
  let attempts = 0;
  // Only the first attempt rides on the placeholder's turn; a repeat waits for its own.
  await writeTwice(i, ledger, options, () => p.fill(filled, piece, i, justPlaced && attempts++ === 0));
  await ledger.posted(i, filled);
  return filled;
}

/**
 * A write that may simply be repeated (an edit; a placeholder, whose orphan is harmless): a second
 * try after an unknown outcome; a failure that may be retried later leaves the piece for then.
 */
async function writeTwice<T>(i: number, ledger: PieceLedger, options: SendPiecesOptions, write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      const how = options.classify(err);
      // Only a placeholder's post leaves the piece started; a fill failure leaves it placed.
      if (ledger.state(i) === 'started' && how !== 'refused') await ledger.failed(i, how, err instanceof Error ? err.message : String(err));
      if (how !== 'unknown' || attempt >= 2) throw err;
    }
  }
}

/** Asks the platform whether an unknown piece landed: its id, or the text to send (the piece, or the piece with the note). */
async function resolveUnknown(piece: string, i: number, ledger: PieceLedger, options: SendPiecesOptions): Promise<{ posted?: string; text: string }> {
  const found = options.find ? await options.find(piece, i).catch(() => undefined) : undefined;
  if (typeof found === 'string') {
    await ledger.posted(i, found);
    return { posted: found, text: piece };
  }
  return { text: found === null ? piece : mayRepeat(piece, options.limit) };
}

/**
 * One piece (`text`: the piece as it goes now, with the note when it is sent again): started,
 * sent, posted. A write that fails with an unknown outcome is resolved at once, never left as silence.
 */
async function sendOne(
  piece: string,
  text: string,
  i: number,
  ledger: PieceLedger,
  options: SendPiecesOptions,
  resendable: (index: number) => boolean,
): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    await options.ready?.(i);
    // Even a write that could simply be repeated is marked: the mark is the fence that stops a
    // worker which froze past its lock before it writes to the platform.
    await ledger.started(i);
    try {
      const id = await options.send(text, i);
      await ledger.posted(i, id);
      return id;
    } catch (err) {
      const how = options.classify(err);
      const message = err instanceof Error ? err.message : String(err);
      if (how === 'retry') await ledger.failed(i, 'retry', message);
      if (how !== 'unknown' || attempt >= 2) throw err;
      await ledger.failed(i, 'unknown', message);
      if (resendable(i)) continue;
      // Resolved from the piece itself: a noted text is never noted twice.
      const found = await resolveUnknown(piece, i, ledger, options);
      if (found.posted !== undefined) return found.posted;
      text = found.text;
    }
  }
}
