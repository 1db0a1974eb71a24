import type { Redis } from 'ioredis';
import { nextUtcMidnight, utcDay } from './utc-day.js';

/** Who spends: a person on one platform (the same person on two platforms has two budgets). */
export interface BudgetUser {
  platform: string;
  id: string;
}

/** Tokens held on one day's counter for one model call, until the call is settled. */
export interface BudgetReservation {
  /** The counter it was taken from: a call that ends after midnight settles on the day it started. */
  readonly key: string;
  readonly tokens: number;
}

export type ReserveResult = { ok: true; reservation: BudgetReservation; total: number } | { ok: false; spent: number };

/** A day's counter outlives its day by a day, so a worker whose clock is a little behind still finds it. */
const KEY_TTL_SECONDS = 48 * 3600;

/** Result codes of RESERVE. */
export const RESERVED = { refused: 0, held: 1 } as const;

// KEYS: the person's counter for the day   ARGV: tokens to reserve, the daily limit, TTL seconds
// → {1, the day's total with the reservation} held · {0, the day's total} refused (it would go over the limit)
// Reservations and settled usage share the one counter: what is held for calls in flight counts as spent.
const RESERVE = `
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
local tokens = tonumber(ARGV[1])
if spent + tokens > tonumber(ARGV[2]) then return {0, spent} end
local total = redis.call('INCRBY', KEYS[1], tokens)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return {1, total}
`;

// KEYS: the counter the reservation was taken from   ARGV: actual − reserved tokens, TTL seconds
// → the day's total (never below 0)
const SETTLE = `
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
if total < 0 then
  redis.call('SET', KEYS[1], 0)
  total = 0
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return total
`;

interface BudgetScripts {
  sbTokensReserve(counter: string, tokens: number, limit: number, ttl: number): Promise<[number, number]>;
  sbTokensSettle(counter: string, delta: number, ttl: number): Promise<number>;
}

/** Defines the scripts on a connection (idempotent per connection). */
function withBudgetScripts(redis: Redis): Redis & BudgetScripts {
  const r = redis as Redis & BudgetScripts;
  if (typeof r.sbTokensReserve === 'function') return r;
  redis.defineCommand('sbTokensReserve', { numberOfKeys: 1, lua: RESERVE });
  redis.defineCommand('sbTokensSettle', { numberOfKeys: 1, lua: SETTLE });
  return r;
}

/**
 * Model tokens per person per UTC day (USER_DAILY_TOKENS), one Redis counter per person and day
 * under the queue's hash-tagged prefix, so every worker adds to the same number. A model call
 * reserves its estimate on the counter before it starts (atomically: refused when it would go
 * over the limit) and settles to what it used after, so parallel sessions cannot all pass.
 */
export class TokenBudget {
  private readonly redis: Redis & BudgetScripts;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    /** Tokens a person may use per UTC day. */
    readonly limit: number,
  ) {
    this.redis = withBudgetScripts(redis);
  }

  key(user: BudgetUser, now: number): string {
    return `${this.prefix}:tokens:${user.platform}:${user.id}:${utcDay(now)}`;
  }

  /** Today's total: settled usage plus what calls in flight hold. */
  async spent(user: BudgetUser, now = Date.now()): Promise<number> {
    return Number((await this.redis.get(this.key(user, now))) ?? 0);
  }

  /** Adds what a model call used; returns the day's total. */
  async add(user: BudgetUser, tokens: number, now = Date.now()): Promise<number> {
    const key = this.key(user, now);
    const results = await this.redis.multi().incrby(key, tokens).expire(key, KEY_TTL_SECONDS).exec();
    const [err, total] = results?.[0] ?? [new Error('INCRBY returned nothing')];
    if (err) throw err;
    return Number(total);
  }

  /** Holds `tokens` for one model call, unless today's total plus them would go over the limit. */
  async reserve(user: BudgetUser, tokens: number, now = Date.now()): Promise<ReserveResult> {
    // A reservation never settled (its worker died) stays in this day's counter only: it costs the person at most the rest of that UTC day.
    const key = this.key(user, now);
    const held = Math.max(0, Math.ceil(tokens));
    const [code, total] = await this.redis.sbTokensReserve(key, held, this.limit, KEY_TTL_SECONDS);
    if (Number(code) !== RESERVED.held) return { ok: false, spent: Number(total) };
    return { ok: true, reservation: { key, tokens: held }, total: Number(total) };
  }

  /** Replaces a reservation by what the call used (0: it used nothing, the reservation is released); returns the day's total. */
  async settle(reservation: BudgetReservation, tokens: number): Promise<number> {
    const delta = Math.max(0, Math.ceil(tokens)) - reservation.tokens;
    if (delta === 0) return Number((await this.redis.get(reservation.key)) ?? 0);
    return Number(await this.redis.sbTokensSettle(reservation.key, delta, KEY_TTL_SECONDS));
  }

  /** When today's spending stops counting. */
  resetsAt(now = Date.now()): number {
    return nextUtcMidnight(now);
  }
}
