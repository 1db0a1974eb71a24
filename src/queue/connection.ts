import { Redis, type RedisOptions } from 'ioredis';

/**
 * BullMQ workers block on Redis and must not fail a command after N retries
 * (maxRetriesPerRequest: null); every connection we make uses the same settings.
 */
export function connectRedis(url: string, name: string, extra: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: name, ...extra });
}
