import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { estimateTokens } from '../../src/agent/budget.js';
import { TokenBudget } from '../../src/access/token-budget.js';
import { terminalMessage } from '../../src/channels/terminal/inbound.js';
import { createLogger } from '../../src/log.js';
import { Metrics } from '../../src/metrics/metrics.js';
import type { RunContext } from '../../src/run/context.js';
import { allowanceFor } from '../../src/run/token-allowance.js';
import { toModelTools } from '../../src/tools/schema.js';
import { startHarness, type Harness } from '../agent/harness.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

/**
 * Finding (low): the daily token budget was read before a call (`spent < limit`) and added to
 * after it, so N sessions of one person running at once all passed the check and overshot the
 * limit by a call each. A call now reserves its prompt's estimate atomically before it starts
 * (refused when that would go over what is left) and settles to its actual usage after.
 */
const quiet = () => createLogger('info', 'test', new Writable({ write: (_chunk, _enc, done) => done() }));
const N = 5;
const day = Date.parse('2025-03-09T10:00:00Z');

describe('security: parallel sessions of one person cannot overshoot USER_DAILY_TOKENS', () => {
  const redis = testRedis();
  const prefix = uniquePrefix('sec-parallel');
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness();
  });
  afterEach(async () => {
    await h.close();
  });
  afterAll(async () => {
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  it(`${N} runs of one person at once, a limit that fits one call's estimate but not two: one call is made, the counter is its usage`, async () => {
    const prompt = estimateTokens(
      [
        { role: 'system', content: 'You are a test assistant.' },
        { role: 'user', content: 'hello' },
      ],
      toModelTools(h.tools),
    );
    const limit = 2 * prompt - 1;
    const usage = { prompt_tokens: prompt, completion_tokens: 10 };
    // Slow answers: every run reserves (or is refused) while the first call is still out.
    h.fake.setHandler(() => ({ content: 'ok', usage, delayMs: 300 }));
    const message = terminalMessage('s', 'hello', 'parallel-ada');
    // A worker each: its own connection, its own TokenBudget, the same Redis counter.
    const workers = Array.from({ length: N }, () => testRedis());
    try {
      const runs = await Promise.all(
        workers.map((conn) => {
          const ctx = { deps: { agent: { tokenBudget: new TokenBudget(conn, prefix, limit) }, metrics: new Metrics() }, log: quiet() } as unknown as RunContext;
          return h.run('hello', { budget: allowanceFor(ctx, message)! });
        }),
      );
      const states = runs.map((r) => `${r.outcome.state}${r.outcome.reason ? `:${r.outcome.reason}` : ''}`).sort();
      expect(states).toEqual(['completed', ...Array(N - 1).fill('failed:budget')]);
      expect(h.fake.requests).toHaveLength(1);
      const spent = await new TokenBudget(redis, prefix, limit).spent({ platform: 'terminal', id: 'parallel-ada' });
      expect(spent).toBe(prompt + 10);
      expect(spent).toBeLessThanOrEqual(limit);
    } finally {
      for (const conn of workers) conn.disconnect();
    }
  });

  it(`${N} reservations at once: exactly the ones that fit pass; settling leaves the sum of actual usage`, async () => {
    const ada = { platform: 'slack', id: 'U0PAR' };
    const estimate = 100;
    const limit = 250;
    const conns = Array.from({ length: N }, () => testRedis());
    try {
      const results = await Promise.all(conns.map((c) => new TokenBudget(c, prefix, limit).reserve(ada, estimate, day)));
      const held = results.filter((r) => r.ok);
      expect(held).toHaveLength(2);
      expect(results.filter((r) => !r.ok)).toHaveLength(N - 2);
      const budget = new TokenBudget(redis, prefix, limit);
      expect(await budget.spent(ada, day)).toBe(200);
      // Actual usage: one call used less than reserved, the other more.
      const [a, b] = held.map((r) => (r.ok ? r.reservation : undefined));
      await budget.settle(a!, 90);
      await budget.settle(b!, 120);
      expect(await budget.spent(ada, day)).toBe(210);
      // 40 left: a call estimated at 41 is refused, one at 40 fits; one that used nothing releases its reservation.
      expect((await budget.reserve(ada, 41, day)).ok).toBe(false);
      const last = await budget.reserve(ada, 40, day);
      expect(last.ok).toBe(true);
      await budget.settle((last as { reservation: Parameters<TokenBudget['settle']>[0] }).reservation, 0);
      expect(await budget.spent(ada, day)).toBe(210);
    } finally {
      for (const c of conns) c.disconnect();
    }
  });

  it("a reservation nobody settles (its worker died) costs at most its own day; a late settle goes to the reservation's day", async () => {
    const bob = { platform: 'slack', id: 'U0LEAK' };
    const budget = new TokenBudget(redis, prefix, 1000);
    expect((await budget.reserve(bob, 900, day)).ok).toBe(true);
    expect((await budget.reserve(bob, 200, day)).ok).toBe(false);
    const nextDay = Date.parse('2025-03-10T00:00:00Z');
    expect(await budget.spent(bob, nextDay)).toBe(0);
    expect((await budget.reserve(bob, 200, nextDay)).ok).toBe(true);
    const late = await budget.reserve(bob, 300, day + 60_000);
    expect(late.ok).toBe(false);
    const fits = await budget.reserve(bob, 100, day + 60_000);
    expect(fits.ok).toBe(true);
    // Settled after midnight: it corrects the counter it was reserved on, not the new day's.
    if (fits.ok) await budget.settle(fits.reservation, 50);
    expect(await budget.spent(bob, day)).toBe(950);
    expect(await budget.spent(bob, nextDay)).toBe(200);
  });
});
