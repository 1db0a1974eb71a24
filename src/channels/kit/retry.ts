import { sleep as abortableSleep } from '../../lib/sleep.js';

/**
 * What one failed platform call means for trying it again. Each channel maps its own errors to
 * one (its classifier); this file alone decides what is repeated, when, and what is given up.
 */
export type CallFailure =
  /** The platform did not do it and says how long to wait (a 429). */
  | { kind: 'rate_limited'; retryAfterMs: number }
  /** Surely not performed: the request never left. Safe to repeat. */
  | { kind: 'unsent' }
  /** May have been performed (a 5xx, a timeout, a lost answer): repeated only when the call is idempotent. */
  | { kind: 'transient' }
  /** Repeating cannot help (refused, malformed, gone). */
  | { kind: 'permanent' };

export interface RetryOptions {
  /** The channel's classifier. */
  classify(err: unknown): CallFailure;
  /** Repeating the call cannot do it twice (an edit, a delete, a post with a nonce). */
  idempotent: boolean;
  /** Attempts in all, the first included (default 4). */
  attempts?: number;
  /** A 429 asking to wait longer than this is not waited for: its error is thrown (default 300 s). */
  maxWaitMs?: number;
  /** The wait before repeat n (1-based) after an unsent or transient failure; the last entry repeats. */
  backoffMs?: readonly number[];
  /** Stops the waiting; the last error is thrown. */
  signal?: AbortSignal;
  /** Told before each wait (logs, a per-conversation flood record). */
  onWait?: (failure: CallFailure, waitMs: number, err: unknown) => void;
  /** Test seam. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<unknown>;
}

/** How a platform call may be repeated, as its caller says it: the channel's wrapper adds its classifier and its defaults. */
export type CallRetry = Omit<RetryOptions, 'classify'>;

export const DEFAULT_BACKOFF_MS: readonly number[] = [500, 1_500, 4_000];

/**
 * The one classify-then-retry loop for the platforms' HTTP calls: a 429 waits as long as the
 * platform asks (up to a cap) and repeats; a request that never left is repeated with backoff; a
 * call that may have been performed is repeated only when repeating is harmless; anything else is
 * thrown at once, as the platform's error.
 */
export async function withRetries<T>(call: () => Promise<T>, options: RetryOptions): Promise<T> {
  const attempts = options.attempts ?? 4;
  const maxWaitMs = options.maxWaitMs ?? 300_000;
  const backoff = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  const wait = options.sleep ?? abortableSleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const failure = options.classify(err);
      if (!repeatable(failure, options.idempotent) || attempt >= attempts || options.signal?.aborted) throw err;
      const waitMs = failure.kind === 'rate_limited' ? failure.retryAfterMs : backoff[Math.min(attempt - 1, backoff.length - 1)]!;
      if (waitMs > maxWaitMs) throw err;
      options.onWait?.(failure, waitMs, err);
      await wait(waitMs, options.signal);
      if (options.signal?.aborted) throw err;
    }
  }
}

function repeatable(failure: CallFailure, idempotent: boolean): boolean {
  return failure.kind === 'rate_limited' || failure.kind === 'unsent' || (failure.kind === 'transient' && idempotent);
}
