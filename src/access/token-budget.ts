import type { Redis } from 'ioredis';
import { RedisKeys } from '../queue/keys.js';
import { defineScript, runScript } from '../queue/redis-scripts.js';
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

// `counter`: the person's counter for the day. → {1, the day's total with the reservation} held ·
// {0, the day's total} refused (it would go over the limit). Reservations and settled usage share
// the one counter: what is held for calls in flight counts as spent.
const RESERVE = defineScript({
  name: 'sbTokensReserve',
  keys: ['counter'],
  args: ['tokens', 'limit', 'ttl'],
  lua: `
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
local tokens = tonumber(ARGV[1])
if spent + tokens > tonumber(ARGV[2]) then return {0, spent} end
local total = redis.call('INCRBY', KEYS[1], tokens)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return {1, total}
`,
  decode: (reply, unexpected): { kind: 'held'; total: number } | { kind: 'refused'; spent: number } => {
    if (!Array.isArray(reply) || typeof reply[1] !== 'number') return unexpected();
    if (reply[0] === RESERVED.held) return { kind: 'held', total: reply[1] };
    return reply[0] === RESERVED.refused ? { kind: 'refused', spent: reply[1] } : unexpected();
  },
});

// `counter`: the one the reservation was taken from; `delta`: actual − reserved tokens. → the day's total (never below 0)
const SETTLE = defineScript({
  name: 'sbTokensSettle',
  keys: ['counter'],
  args: ['delta', 'ttl'],
  lua: `
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
if total < 0 then
  redis.call('SET', KEYS[1], 0)
  total = 0
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return total
`,
  decode: (reply, unexpected): number => (typeof reply === 'number' ? reply : unexpected()),
});

/**
 * Model tokens per person per UTC day (USER_DAILY_TOKENS), one Redis counter per person and day
 * under the queue's hash-tagged prefix, so every worker adds to the same number. A model call
 * reserves its estimate on the counter before it starts (atomically: refused when it would go
 * over the limit) and settles to what it used after, so parallel sessions cannot all pass.
 */
export class TokenBudget {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    /** Tokens a person may use per UTC day. */
    readonly limit: number,
  ) {
    this.keys = new RedisKeys(prefix);
  }

  key(user: BudgetUser, now: number): string {
    return this.keys.tokens(user.platform, user.id, utcDay(now));
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
    const result = await runScript(this.redis, RESERVE, { keys: { counter: key }, args: { tokens: held, limit: this.limit, ttl: KEY_TTL_SECONDS } });
    if (result.kind === 'refused') return { ok: false, spent: result.spent };
    return { ok: true, reservation: { key, tokens: held }, total: result.total };
  }

  /** Replaces a reservation by what the call used (0: it used nothing, the reservation is released); returns the day's total. */
  async settle(reservation: BudgetReservation, tokens: number): Promise<number> {
    const delta = Math.max(0, Math.ceil(tokens)) - reservation.tokens;
    if (delta === 0) return Number((await this.redis.get(reservation.key)) ?? 0);
    return runScript(this.redis, SETTLE, { keys: { counter: reservation.key }, args: { delta, ttl: KEY_TTL_SECONDS } });
  }

  /** When today's spending stops counting. */
  resetsAt(now = Date.now()): number {
    return nextUtcMidnight(now);
  }
}
