import { Redis } from 'ioredis';
import { fail, ok, skip, type CheckResult } from '../types.js';

/** Redis reachable, its version, and maxmemory-policy (BullMQ needs noeviction). */
export async function checkRedis(url: string, timeoutMs: number): Promise<CheckResult[]> {
  const shown = url.replace(/\/\/[^/@\s]*@/, '//…@');
  // A cluster's seed node answers INFO and CONFIG like any Redis.
  const redis = new Redis(url.replace('+cluster', ''), {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    enableReadyCheck: false,
    connectionName: 'switchboard-doctor',
  });
  let lastError = '';
  redis.on('error', (err: Error) => (lastError = err.message));
  try {
    try {
      await redis.connect();
    } catch (err) {
      return [
        fail(
          'redis',
          `does not answer at ${shown} (${lastError || (err as Error).message})`,
          'start Redis (apt install redis-server, brew install redis, docker compose up -d redis) or set REDIS_URL',
        ),
        skip('redis maxmemory-policy', 'Redis not reachable'),
      ];
    }
    let version = 'unknown version';
    try {
      const info = await redis.info('server');
      version = /redis_version:(\S+)/.exec(info)?.[1] ?? version;
    } catch (err) {
      return [
        fail('redis', `${shown} answers but INFO failed: ${(err as Error).message}`, 'check the credentials in REDIS_URL (redis://user:password@host:port)'),
        skip('redis maxmemory-policy', 'Redis not usable'),
      ];
    }
    const reachable = ok('redis', `${shown}, Redis ${version}`);
    let policy: string | undefined;
    try {
      const answer = (await redis.config('GET', 'maxmemory-policy')) as string[];
      policy = answer[1];
    } catch (err) {
      return [
        reachable,
        skip(
          'redis maxmemory-policy',
          `CONFIG is not allowed here (${(err as Error).message.split('\n')[0]}): managed Redis; make sure its eviction policy is noeviction`,
        ),
      ];
    }
    if (policy === undefined)
      return [reachable, skip('redis maxmemory-policy', 'CONFIG GET returned nothing (managed Redis?): make sure the eviction policy is noeviction')];
    if (policy !== 'noeviction') {
      return [
        reachable,
        fail(
          'redis maxmemory-policy',
          `${policy}: Redis may evict queue keys under memory pressure`,
          'BullMQ needs noeviction: CONFIG SET maxmemory-policy noeviction (and maxmemory-policy noeviction in redis.conf)',
        ),
      ];
    }
    return [reachable, ok('redis maxmemory-policy', 'noeviction')];
  } finally {
    redis.disconnect();
  }
}
