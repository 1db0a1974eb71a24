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

/** posted: the platform confirmed it · started: an attempt began and never learned the outcome · unknown: given up as uncertain · new. */
export type PieceState = { posted: string } | 'started' | 'unknown' | 'new';

export interface PieceLedger {
  state(index: number): PieceState;
  /** Written before the piece is sent. */
  started(index: number): Promise<void>;
  posted(index: number, id: string): Promise<void>;
  /** `unknown`: not sent again; `retry`: the piece is new again. */
  failed(index: number, how: 'unknown' | 'retry', error: string): Promise<void>;
}

/** A ledger that lives as long as one delivery (for callers without a journal: tests, one-off posts). */
export function memoryLedger(): PieceLedger {
  const states = new Map<number, PieceState>();
  return {
    state: (i) => states.get(i) ?? 'new',
    started: async (i) => void states.set(i, 'started'),
    posted: async (i, id) => void states.set(i, { posted: id }),
    failed: async (i, how) => void (how === 'unknown' ? states.set(i, 'unknown') : states.delete(i)),
  };
}

export interface SendPiecesOptions<P> {
  send(piece: P, index: number): Promise<string>;
  classify(err: unknown): WriteFailure;
  /** The write can be repeated without posting twice (an edit; a Discord message with its nonce). */
  resendable?: (index: number) => boolean;
  /** Ledger index of the first piece (a delivery that moved to another surface mid-way). */
  offset?: number;
}

/**
 * Posts the pieces in order, through the ledger: a posted piece is skipped (its id kept); a piece
 * whose earlier attempt has no known outcome is not posted again unless its write is resendable;
 * a write that fails with an unknown outcome is recorded as such and delivery goes on with the
 * next piece. A refusal, or a failure that may be retried, is thrown to the caller. Returns the
 * ids of the pieces now known posted.
 */
export async function sendPieces<P>(pieces: readonly P[], ledger: PieceLedger, options: SendPiecesOptions<P>): Promise<string[]> {
  const resendable = options.resendable ?? (() => false);
  const ids: string[] = [];
  for (const [k, piece] of pieces.entries()) {
    const i = (options.offset ?? 0) + k;
    const state = ledger.state(i);
    if (typeof state === 'object') {
      ids.push(state.posted);
      continue;
    }
    if (state === 'unknown') continue;
    if (state === 'started' && !resendable(i)) {
      await ledger.failed(i, 'unknown', 'an earlier attempt was interrupted while posting it');
      continue;
    }
    await ledger.started(i);
    let id: string;
    try {
      id = await options.send(piece, i);
    } catch (err) {
      const how = options.classify(err);
      const message = err instanceof Error ? err.message : String(err);
      if (how === 'unknown' && !resendable(i)) {
        await ledger.failed(i, 'unknown', message);
        continue;
      }
      if (how === 'retry') await ledger.failed(i, 'retry', message);
      throw err;
    }
    await ledger.posted(i, id);
    ids.push(id);
  }
  return ids;
}
