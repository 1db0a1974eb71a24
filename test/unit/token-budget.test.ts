import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { formatWait, nextUtcMidnight, utcDay } from '../../src/access/utc-day.js';
import { TokenBudget } from '../../src/access/token-budget.js';
import { budgetLine, honestLine } from '../../src/run/delivery/honest-line.js';
import { allowanceFor } from '../../src/run/token-allowance.js';
import type { RunContext } from '../../src/run/context.js';
import { createLogger } from '../../src/log.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { terminalMessage } from '../../src/channels/terminal/inbound.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

const at = (iso: string) => Date.parse(iso);

describe('UTC day math', () => {
  it('names the UTC day, whatever the local time zone says', () => {
    expect(utcDay(at('2025-03-09T00:00:00Z'))).toBe('2025-03-09');
    expect(utcDay(at('2025-03-09T23:59:59.999Z'))).toBe('2025-03-09');
    expect(utcDay(at('2025-03-09T23:30:00-05:00'))).toBe('2025-03-10');
  });

  it('the next midnight is the start of the next UTC day; a moment at midnight belongs to the day it starts', () => {
    expect(nextUtcMidnight(at('2025-03-09T18:48:00Z'))).toBe(at('2025-03-10T00:00:00Z'));
    expect(nextUtcMidnight(at('2025-03-09T00:00:00Z'))).toBe(at('2025-03-10T00:00:00Z'));
    expect(nextUtcMidnight(at('2024-02-28T12:00:00Z'))).toBe(at('2024-02-29T00:00:00Z'));
    expect(nextUtcMidnight(at('2025-12-31T23:59:59Z'))).toBe(at('2026-01-01T00:00:00Z'));
  });

  it('a wait reads in hours and minutes, rounded up, never 0 min', () => {
    expect(formatWait((5 * 60 + 12) * 60_000)).toBe('5 h 12 min');
    expect(formatWait((5 * 60 + 11) * 60_000 + 1)).toBe('5 h 12 min');
    expect(formatWait(3 * 3_600_000)).toBe('3 h');
    expect(formatWait(7 * 60_000)).toBe('7 min');
    expect(formatWait(1_000)).toBe('1 min');
    expect(formatWait(0)).toBe('1 min');
    expect(formatWait(24 * 3_600_000)).toBe('24 h');
  });
});

describe('the budget line', () => {
  it('says in one line how much and when it resets, and nothing of how it is configured', () => {
    const line = budgetLine(50_000, at('2025-03-09T18:48:00Z'));
    expect(line).toBe("You have used today's token budget (50,000 tokens); it resets at 00:00 UTC, in 5 h 12 min.");
    expect(line).not.toContain('\n');
    expect(line).not.toMatch(/USER_DAILY_TOKENS|config/i);
  });

  it('is what honestLine gives for budget', () => {
    expect(honestLine('budget', { dailyTokens: 1000, now: at('2025-03-09T23:59:30Z') })).toBe(
      "You have used today's token budget (1,000 tokens); it resets at 00:00 UTC, in 1 min.",
    );
  });
});

describe('TokenBudget (real Redis)', () => {
  const redis = testRedis();
  const prefix = uniquePrefix('tokens');
  afterAll(async () => {
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });
  const ada = { platform: 'slack', id: 'U0ADA' };
  const day = at('2025-03-09T10:00:00Z');

  it('adds per person per UTC day under the hash-tagged prefix, and the key expires in about two days', async () => {
    const budget = new TokenBudget(redis, prefix, 1000);
    expect(await budget.spent(ada, day)).toBe(0);
    expect(await budget.add(ada, 600, day)).toBe(600);
    expect(await budget.add(ada, 600, day + 3_600_000)).toBe(1200);
    expect(await budget.spent(ada, day)).toBe(1200);
    // Another person, another platform with the same id, the next day: each its own count.
    expect(await budget.spent({ platform: 'slack', id: 'U0BOB' }, day)).toBe(0);
    expect(await budget.spent({ platform: 'discord', id: 'U0ADA' }, day)).toBe(0);
    expect(await budget.spent(ada, at('2025-03-10T00:00:00Z'))).toBe(0);
    const key = `${prefix}:tokens:slack:U0ADA:2025-03-09`;
    expect(budget.key(ada, day)).toBe(key);
    expect(await redis.ttl(key)).toBeGreaterThan(47 * 3600);
    expect(await redis.ttl(key)).toBeLessThanOrEqual(48 * 3600);
    expect(budget.resetsAt(day)).toBe(at('2025-03-10T00:00:00Z'));
  });

  it("the run's allowance refuses at the budget, logs who and why (never the text) and counts the refusal", async () => {
    const lines: string[] = [];
    const log = createLogger('info', 'test', new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }));
    const metrics = new Metrics();
    const budget = new TokenBudget(redis, prefix, 1000);
    const ctx = { deps: { agent: { tokenBudget: budget }, metrics }, log } as unknown as RunContext;
    const message = terminalMessage('s', 'a secret question', 'ada');
    const allowance = allowanceFor(ctx, message)!;

    const held = async (estimate: number) => {
      const r = await allowance.reserve(estimate);
      if (!r.ok) throw new Error(`refused: ${r.detail}`);
      return r.reservation;
    };
    // Reserved by the estimate, settled to the usage.
    await allowance.settle(await held(100), 999);
    expect(await budget.spent({ platform: 'terminal', id: 'ada' })).toBe(999);
    await allowance.settle(await held(1), 1);
    expect(await allowance.reserve(1)).toMatchObject({ ok: false, detail: expect.stringContaining('1000 of 1000') });

    const refusal = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'model call refused: daily token budget used up');
    expect(refusal).toMatchObject({ userId: 'ada', platform: 'terminal', reason: 'budget' });
    expect(lines.join('')).not.toContain('a secret question');
    expect((await metrics.refusals.get()).values).toEqual([{ labels: { platform: 'terminal', reason: 'budget' }, value: 1 }]);
    expect(allowanceFor({ deps: { agent: {} }, log } as unknown as RunContext, message)).toBeUndefined();
  });
});
