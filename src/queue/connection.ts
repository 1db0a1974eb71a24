import { Redis } from 'ioredis';
import type { Logger } from '../log.js';

/** One warning per connection at most this often while Redis is away (ioredis reconnects by itself). */
const ERROR_LOG_INTERVAL_MS = 10_000;

/**
 * BullMQ workers block on Redis and must not fail a command after N retries
 * (maxRetriesPerRequest: null); every connection we make uses the same settings, and logs its
 * connection errors (throttled) instead of leaving them unhandled.
 */
export function connectRedis(url: string, name: string, log?: Logger): Redis {
  const redis = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: name });
  let lastLogged = 0;
  redis.on('error', (err: Error) => {
    if (Date.now() - lastLogged < ERROR_LOG_INTERVAL_MS) return;
    lastLogged = Date.now();
    log?.warn({ connection: name, err: err.message }, 'redis connection error; reconnecting');
  });
  return redis;
}
