import { describe, expect, it } from 'vitest';
import { memoryLedger, sendPieces, type WriteFailure } from '../../src/channels/kit/pieces.js';

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

  it('a write with an unknown outcome is never repeated: recorded as unknown, delivery goes on with the next piece', async () => {
    const ledger = memoryLedger();
    const p = platform({ 1: 'unknown' });
    expect(await sendPieces(['a', 'b', 'c'], ledger, { send: p.send, classify })).toEqual(['id-1', 'id-3']);
    expect(ledger.state(1)).toBe('unknown');
    await sendPieces(['a', 'b', 'c'], ledger, { send: p.send, classify });
    expect(p.posted).toEqual(['a', 'b', 'c']);
  });

  it('a resendable write (an idempotency key) with an unknown outcome is thrown and sent again by the next delivery', async () => {
    const ledger = memoryLedger();
    const p = platform({ 0: 'unknown' });
    await expect(sendPieces(['a'], ledger, { send: p.send, classify, resendable: () => true })).rejects.toBeInstanceOf(Failing);
    expect(ledger.state(0)).toBe('started');
    expect(await sendPieces(['a'], ledger, { send: p.send, classify, resendable: () => true })).toEqual(['id-2']);
  });

  it('a piece an earlier attempt started and never confirmed (its worker died) is not posted again', async () => {
    const ledger = memoryLedger();
    await ledger.started(0);
    const p = platform();
    expect(await sendPieces(['a', 'b'], ledger, { send: p.send, classify })).toEqual(['id-1']);
    expect(p.posted).toEqual(['b']);
    expect(ledger.state(0)).toBe('unknown');
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
