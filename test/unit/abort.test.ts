import { describe, expect, it } from 'vitest';
import { anySignal } from '../../src/lib/abort.js';

describe('anySignal', () => {
  it('aborts with the reason of the first source that aborts, once', () => {
    const a = new AbortController();
    const b = new AbortController();
    const { signal } = anySignal([a.signal, b.signal]);
    let fired = 0;
    signal.addEventListener('abort', () => fired++);
    expect(signal.aborted).toBe(false);
    b.abort('stop');
    a.abort('late');
    expect([signal.aborted, signal.reason, fired]).toEqual([true, 'stop', 1]);
  });

  it('is aborted at once when a source already is', () => {
    const a = new AbortController();
    a.abort(new Error('gone'));
    const { signal } = anySignal([new AbortController().signal, a.signal]);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('gone');
  });

  it('after dispose a source no longer reaches it', () => {
    const a = new AbortController();
    const { signal, dispose } = anySignal([a.signal]);
    dispose();
    a.abort('after');
    expect(signal.aborted).toBe(false);
  });
});
