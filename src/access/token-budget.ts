import type { Redis } from 'ioredis';
import { nextUtcMidnight, utcDay } from './utc-day.js';

/** Who spends: a person on one platform (the same person on two platforms has two budgets). */
export interface BudgetUser {
  platform: string;
  id: string;
}

/** A day's counter outlives its day by a day, so a worker whose clock is a little behind still finds it. */
const KEY_TTL_SECONDS = 48 * 3600;

/**
 * Model tokens per person per UTC day (USER_DAILY_TOKENS), one Redis counter per person and day
 * under the queue's hash-tagged prefix, so every worker adds to the same number.
 */
export class TokenBudget {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    /** Tokens a person may use per UTC day. */
    readonly limit: number,
  ) {}

  key(user: BudgetUser, now: number): string {
    return `${this.prefix}:tokens:${user.platform}:${user.id}:${utcDay(now)}`;
  }

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

  /** When today's spending stops counting. */
  resetsAt(now = Date.now()): number {
    return nextUtcMidnight(now);
  }
}
