import type { Redis } from 'ioredis';
import { RedisKeys } from '../queue/keys.js';

/** How often a person refused in a group is told how to get access (more would let anyone make the bot spam a group). */
export const GROUP_NOTICE_INTERVAL_S = 3600;

/** At most one refusal notice per person per platform per interval, shared by every gateway. */
export class RefusalNotices {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = new RedisKeys(prefix);
  }

  /** True when this person may be told now (and records that they were). */
  async first(platform: string, userId: string): Promise<boolean> {
    const key = this.keys.refusalNotice(platform, userId);
    return (await this.redis.set(key, '1', 'EX', GROUP_NOTICE_INTERVAL_S, 'NX')) === 'OK';
  }
}
