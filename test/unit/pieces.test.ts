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

/**
 * A chat whose messages are posted and edited (Telegram): `place` posts the placeholder, `fill`
 * edits it; the writes told to fail take effect and lose their answer (`unknown`) or never leave
 * (`retry`). `crashAfter` stops the delivery right after a write took effect, as a killed worker.
 */
function chat(failures: { place?: Record<number, WriteFailure>; fill?: Record<number, WriteFailure> } = {}) {
  const messages = new Map<string, string>();
  let places = 0;
  let fills = 0;
  const placeholder = {
    place: async () => {
      const fail = failures.place?.[places];
      places++;
      if (fail === 'retry') throw new Failing(fail);
      const id = `m${messages.size + 1}`;
      messages.set(id, '…');
      if (fail) throw new Failing(fail);
      return id;
    },
    fill: async (id: string, piece: string) => {
      const fail = failures.fill?.[fills];
      fills++;
      if (fail === 'retry') throw new Failing(fail);
      messages.set(id, piece);
      if (fail) throw new Failing(fail);
    },
  };
  const send = async () => {
    throw new Error('a piece of a durable ledger is never sent directly');
  };
  return { messages, placeholder, send, shown: () => [...messages.values()], writes: () => places + fills };
}
const durable = () => ({ ...memoryLedger(), durable: true });

/** A ledger whose writes are refused, as the journal refuses a worker that froze past its lock (another run owns the session now). */
function fencedLedger(durable: boolean) {
  const refuse = async () => {
    throw new Error('journal write refused: another run owns the session');
  };
  return { ...memoryLedger(), durable, started: refuse, posted: refuse, placed: refuse, failed: refuse };
}

describe('the ledger is the fence: a worker whose journal writes are refused writes nothing to the platform', () => {
  it('no piece is sent, resendable or not', async () => {
    const p = platform();
    for (const resendable of [() => false, () => true]) {
      await expect(sendPieces(['a', 'b'], fencedLedger(true), { send: p.send, classify, resendable })).rejects.toThrow(/refused/);
    }
    expect(p.posted).toEqual([]);
  });

  it('no placeholder is posted', async () => {
    const c = chat();
    await expect(sendPieces(['a'], fencedLedger(true), { send: c.send, classify, placeholder: c.placeholder })).rejects.toThrow(/refused/);
    expect(c.writes()).toBe(0);
  });
});

describe('sendPieces in placeholder mode (a create without idempotency key, messages that cannot be looked up)', () => {
  it('with a durable ledger each piece is placed, then edited into its placeholder; a second delivery writes nothing', async () => {
    const ledger = durable();
    const c = chat();
    expect(await sendPieces(['a', 'b'], ledger, { send: c.send, classify, placeholder: c.placeholder })).toEqual(['m1', 'm2']);
    expect(c.shown()).toEqual(['a', 'b']);
    await sendPieces(['a', 'b'], ledger, { send: c.send, classify, placeholder: c.placeholder });
    expect(c.writes()).toBe(4);
  });

  it('with a ledger that dies with the process the piece is sent directly (nobody could read a placeholder id back)', async () => {
    const p = platform();
    const c = chat();
    await sendPieces(['a'], memoryLedger(), { send: p.send, classify, placeholder: c.placeholder });
    expect([p.posted, c.shown()]).toEqual([['a'], []]);
  });

  it('a placeholder whose outcome is unknown is placed again: one orphan placeholder, the piece once, no may-repeat note', async () => {
    const c = chat({ place: { 0: 'unknown' } });
    expect(await sendPieces(['a', 'b'], durable(), { send: c.send, classify, placeholder: c.placeholder })).toEqual(['m2', 'm3']);
    expect(c.shown()).toEqual(['…', 'a', 'b']);
  });

  it('a worker killed after its placeholder landed, before its id was kept: the next delivery places again and answers once', async () => {
    const ledger = durable();
    const c = chat();
    await ledger.started(0);
    await c.placeholder.place(); // landed; the worker died before ledger.placed
    expect(await sendPieces(['a'], ledger, { send: c.send, classify, placeholder: c.placeholder })).toEqual(['m2']);
    expect(c.shown()).toEqual(['…', 'a']);
  });

  it('a worker killed after the edit landed, before posted was kept: the edit is repeated (no change) and nothing is orphaned', async () => {
    const ledger = durable();
    const c = chat();
    await ledger.started(0);
    const id = await c.placeholder.place();
    await ledger.placed(0, id);
    await c.placeholder.fill(id, 'a');
    expect(await sendPieces(['a'], ledger, { send: c.send, classify, placeholder: c.placeholder })).toEqual(['m1']);
    expect(c.shown()).toEqual(['a']);
    expect(ledger.state(0)).toEqual({ posted: 'm1' });
  });

  it('an edit with an unknown outcome is repeated at once; a placeholder that never left is thrown for later, the piece new again', async () => {
    const c = chat({ fill: { 0: 'unknown' } });
    expect(await sendPieces(['a'], durable(), { send: c.send, classify, placeholder: c.placeholder })).toEqual(['m1']);
    expect(c.shown()).toEqual(['a']);

    const ledger = durable();
    const d = chat({ place: { 0: 'retry' } });
    await expect(sendPieces(['a'], ledger, { send: d.send, classify, placeholder: d.placeholder })).rejects.toMatchObject({ how: 'retry' });
    expect(ledger.state(0)).toBe('new');
    await sendPieces(['a'], ledger, { send: d.send, classify, placeholder: d.placeholder });
    expect(d.shown()).toEqual(['a']);
  });

  it('the edit rides on its placeholder only when this delivery just posted it, and only on its first attempt', async () => {
    const rides: boolean[] = [];
    const c = chat({ fill: { 0: 'unknown' } });
    const placeholder = {
      place: c.placeholder.place,
      fill: (id: string, piece: string, i: number, justPlaced: boolean) => (rides.push(justPlaced), c.placeholder.fill(id, piece)),
    };
    await sendPieces(['a'], durable(), { send: c.send, classify, placeholder });
    const resumed = durable();
    await resumed.placed(0, await c.placeholder.place());
    await sendPieces(['b'], resumed, { send: c.send, classify, placeholder });
    expect(rides).toEqual([true, false, false]);
  });

  it('a resendable piece (a streamed message to edit) goes through send, not a placeholder', async () => {
    const p = platform();
    const c = chat();
    await sendPieces(['a', 'b'], durable(), { send: p.send, classify, placeholder: c.placeholder, resendable: (i) => i === 0 });
    expect([p.posted, c.shown()]).toEqual([['a'], ['b']]);
  });
});
