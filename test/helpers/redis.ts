import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A hash-tagged prefix of the test's own, so tests never see each other's keys. */
export function uniquePrefix(name: string): string {
  return `{sbt-${name}-${randomUUID().slice(0, 8)}}`;
}

export function testRedis(): Redis {
  return new Redis(REDIS_URL, { maxRetriesPerRequest: null });
}

/** Deletes every key under the prefix. */
export async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix.replace(/[{}[\]*?]/g, '\\$&')}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}
