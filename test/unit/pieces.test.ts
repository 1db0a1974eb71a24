import { describe, expect, it } from 'vitest';
import { MAY_REPEAT_NOTE, mayRepeat, memoryLedger, sendPieces, type WriteFailure } from '../../src/channels/kit/pieces.js';

class Failing extends Error {
  constructor(readonly how: WriteFailure) {
    super(`failed: ${how}`);
  }
}
const classify = (err: unknown): WriteFailure => (err instanceof Failing ? err.how : 'retry');

/** A platform that posts what it is sent, failing the writes it is told to. */
function platform(failures: Record<number, WriteFailure> = {}) {
  const posted: string[] = [];
  let n = 0;
  return {
    posted,
    send: async (piece: string) => {
      const fail = failures[n++];
      if (fail === 'unknown') posted.push(piece); // sent, but the answer was lost
      if (fail) throw new Failing(fail);
      posted.push(piece);
      return `id-${posted.length}`;
    },
  };
}

describe('sendPieces', () => {
  it('posts each piece once; a second delivery with the same ledger posts nothing and returns the same ids', async () => {
    const ledger = memoryLedger();
    const p = platform();
    const first = await sendPieces(['a', 'b', 'c'], ledger, { send: p.send, classify });
    expect(await sendPieces(['a', 'b', 'c'], ledger, { send: p.send, classify })).toEqual(first);
    expect(p.posted).toEqual(['a', 'b', 'c']);
  });

  it('a write certainly not performed (retry) is thrown, and the next delivery sends it and the rest', async () => {
    const ledger = memoryLedger();
    const p = platform({ 1: 'retry' });
    await expect(sendPieces(['a', 'b', 'c'], ledger, { send: p.send, classify })).rejects.toBeInstanceOf(Failing);
    expect(ledger.state(1)).toBe('new');
    await sendPieces(['a', 'b', 'c'], ledger, { send: p.send, classify });
    expect(p.posted).toEqual(['a', 'b', 'c']);
  });

  it('a write with an unknown outcome is never left as silence: without a way to look, it is sent again at once with the may-repeat note, before the next piece', async () => {
    const ledger = memoryLedger();
    const p = platform({ 1: 'unknown' });
    expect(await sendPieces(['a', 'b', 'c'], ledger, { send: p.send, classify })).toEqual(['id-1', 'id-3', 'id-4']);
    expect(p.posted).toEqual(['a', 'b', `${MAY_REPEAT_NOTE}b`, 'c']);
    // A second delivery with the same ledger posts nothing.
    await sendPieces(['a', 'b', 'c'], ledger, { send: p.send, classify });
    expect(p.posted).toHaveLength(4);
  });

  it('an unknown outcome the platform can look up: found, it is not sent again; surely not there, it is sent as it is', async () => {
    const found = platform({ 1: 'unknown' });
    const looked: number[] = [];
    const find = async (_piece: string, i: number) => (looked.push(i), `id-${i + 1}`);
    expect(await sendPieces(['a', 'b', 'c'], memoryLedger(), { send: found.send, classify, find })).toEqual(['id-1', 'id-2', 'id-3']);
    expect(found.posted).toEqual(['a', 'b', 'c']);
    expect(looked).toEqual([1]);

    // The request never reached the platform, though nobody could tell: the lookup says it is not there.
    const posted: string[] = [];
    let calls = 0;
    const send = async (piece: string) => {
      if (calls++ === 1) throw new Failing('unknown');
      posted.push(piece);
      return `id-${posted.length}`;
    };
    expect(await sendPieces(['a', 'b'], memoryLedger(), { send, classify, find: async () => null })).toEqual(['id-1', 'id-2']);
    expect(posted).toEqual(['a', 'b']);
  });

  it('a resendable write (an idempotency key) with an unknown outcome is repeated at once, as it is', async () => {
    const ledger = memoryLedger();
    const p = platform({ 0: 'unknown' });
    expect(await sendPieces(['a'], ledger, { send: p.send, classify, resendable: () => true })).toEqual(['id-2']);
    expect(p.posted).toEqual(['a', 'a']);
  });

  it('a piece an earlier attempt started and never confirmed (its worker died) is looked up, or sent again with the note', async () => {
    const ledger = memoryLedger();
    await ledger.started(0);
    const p = platform();
    expect(await sendPieces(['a', 'b'], ledger, { send: p.send, classify })).toEqual(['id-1', 'id-2']);
    expect(p.posted).toEqual([`${MAY_REPEAT_NOTE}a`, 'b']);

    const again = memoryLedger();
    await again.started(0);
    const q = platform();
    expect(await sendPieces(['a', 'b'], again, { send: q.send, classify, find: async () => 'theirs' })).toEqual(['theirs', 'id-1']);
    expect(q.posted).toEqual(['b']);
  });

  it('a resent piece whose resend also has an unknown outcome carries the note once, not twice', async () => {
    const ledger = memoryLedger();
    await ledger.started(0);
    const p = platform({ 0: 'unknown' });
    expect(await sendPieces(['a'], ledger, { send: p.send, classify })).toEqual(['id-2']);
    expect(p.posted).toEqual([`${MAY_REPEAT_NOTE}a`, `${MAY_REPEAT_NOTE}a`]);
  });

  it('the note leads a piece only where it fits the platform limit', () => {
    expect(mayRepeat('short', 500)).toBe(`${MAY_REPEAT_NOTE}short`);
    const full = 'x'.repeat(2_000);
    expect(mayRepeat(full, 2_000)).toBe(full);
  });

  it('a refusal is thrown as it is, for the caller to settle', async () => {
    const p = platform({ 0: 'refused' });
    await expect(sendPieces(['a'], memoryLedger(), { send: p.send, classify })).rejects.toMatchObject({ how: 'refused' });
  });

  it('numbers pieces from the offset (a delivery that moved to another surface mid-way)', async () => {
    const ledger = memoryLedger();
    await ledger.posted(0, 'first');
    const p = platform();
    await sendPieces(['b', 'c'], ledger, { send: p.send, classify, offset: 1 });
    expect([ledger.state(0), ledger.state(1), ledger.state(2)]).toEqual([{ posted: 'first' }, { posted: 'id-1' }, { posted: 'id-2' }]);
  });
});
