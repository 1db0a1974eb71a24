import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { RedisKeys } from '../queue/keys.js';

export type RateVerdict =
  | { ok: true }
  | { ok: false; retryAfterS: number /** The first refusal of this window: the one the person is told about. */; first: boolean };

/** USER_RATE_LIMIT: messages per minute per person, counted in Redis so every gateway shares one count. */
export class UserRateLimit {
  private readonly limiter: RateLimiterRedis;
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly perMinute: number,
  ) {
    this.keys = new RedisKeys(prefix);
    this.limiter = new RateLimiterRedis({ storeClient: redis, keyPrefix: this.keys.rateLimiter, points: perMinute, duration: 60 });
  }

  /**
   * Counts one message. A platform event seen before (a redelivery, Slack's app_mention + message
   * twin) is not counted again and gets the verdict its first copy got, without a second notice.
   */
  async consume(platform: string, userId: string, eventId: string): Promise<RateVerdict> {
    const key = this.keys.rated(platform, eventId);
    // Marked let through before it is counted: a copy that arrives meanwhile is let through too,
    // as its first copy will be unless refused (the one outcome that is written after).
    if ((await this.redis.set(key, 'ok', 'EX', 300, 'NX')) !== 'OK') {
      return (await this.redis.get(key)) === 'refused' ? { ok: false, retryAfterS: 60, first: false } : { ok: true };
    }
    try {
      await this.limiter.consume(`${platform}:${userId}`);
      return { ok: true };
    } catch (err) {
      // A Redis failure is an Error and is thrown on (the platform delivers the event again); a refusal is a RateLimiterRes.
      if (!(err instanceof RateLimiterRes)) {
        await this.redis.del(key).catch(() => undefined);
        throw err;
      }
      await this.redis.set(key, 'refused', 'EX', 300);
      return { ok: false, retryAfterS: Math.max(1, Math.ceil(err.msBeforeNext / 1000)), first: err.consumedPoints === this.perMinute + 1 };
    }
  }
}
