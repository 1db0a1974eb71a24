import { describe, expect, it } from 'vitest';
import { withRetries, type CallFailure } from '../../src/channels/kit/retry.js';

class Failed extends Error {
  constructor(readonly failure: CallFailure) {
    super(failure.kind);
  }
}

/** A call that fails with each of `failures` in turn, then answers "ok"; the waits it was made to take. */
function script(...failures: CallFailure[]) {
  const waits: number[] = [];
  let calls = 0;
  return {
    waits,
    calls: () => calls,
    call: async () => {
      const failure = failures[calls++];
      if (failure) throw new Failed(failure);
      return 'ok';
    },
    options: (idempotent: boolean, extra: Partial<Parameters<typeof withRetries>[1]> = {}) => ({
      classify: (err: unknown) => (err as Failed).failure,
      idempotent,
      sleep: async (ms: number) => void waits.push(ms),
      ...extra,
    }),
  };
}

describe('withRetries: the one classify-then-retry loop for platform calls', () => {
  it('a 429 waits as long as asked and repeats, idempotent or not', async () => {
    const s = script({ kind: 'rate_limited', retryAfterMs: 2_000 }, { kind: 'rate_limited', retryAfterMs: 500 });
    await expect(withRetries(s.call, s.options(false))).resolves.toBe('ok');
    expect(s.waits).toEqual([2_000, 500]);
  });

  it('a 429 asking longer than maxWaitMs is thrown, not waited for', async () => {
    const s = script({ kind: 'rate_limited', retryAfterMs: 90_000 });
    await expect(withRetries(s.call, s.options(true, { maxWaitMs: 60_000 }))).rejects.toMatchObject({ failure: { kind: 'rate_limited' } });
    expect(s.waits).toEqual([]);
  });

  it('an unsent request is repeated with backoff; a transient failure only when the call is idempotent', async () => {
    const unsent = script({ kind: 'unsent' }, { kind: 'unsent' });
    await expect(withRetries(unsent.call, unsent.options(false))).resolves.toBe('ok');
    expect(unsent.waits).toEqual([500, 1_500]);
    const edit = script({ kind: 'transient' });
    await expect(withRetries(edit.call, edit.options(true, { backoffMs: [7] }))).resolves.toBe('ok');
    expect(edit.waits).toEqual([7]);
    const post = script({ kind: 'transient' });
    await expect(withRetries(post.call, post.options(false))).rejects.toMatchObject({ failure: { kind: 'transient' } });
    expect(post.calls()).toBe(1);
  });

  it('a permanent failure is thrown at once, as the platform error', async () => {
    const s = script({ kind: 'permanent' });
    await expect(withRetries(s.call, s.options(true))).rejects.toBeInstanceOf(Failed);
    expect(s.calls()).toBe(1);
  });

  it('gives up after `attempts`, and when the signal aborts during a wait', async () => {
    const many = script(...Array.from({ length: 9 }, () => ({ kind: 'unsent' as const })));
    await expect(withRetries(many.call, many.options(true, { attempts: 3 }))).rejects.toMatchObject({ failure: { kind: 'unsent' } });
    expect(many.calls()).toBe(3);
    const controller = new AbortController();
    const stopped = script({ kind: 'rate_limited', retryAfterMs: 1_000 });
    const options = { ...stopped.options(true), sleep: async () => controller.abort(), signal: controller.signal };
    await expect(withRetries(stopped.call, options)).rejects.toMatchObject({ failure: { kind: 'rate_limited' } });
    expect(stopped.calls()).toBe(1);
  });
});
