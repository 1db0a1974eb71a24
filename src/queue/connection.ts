import { Cluster, Redis } from 'ioredis';
import type { Logger } from '../log.js';

/** One warning per connection at most this often while Redis is away (ioredis reconnects by itself). */
const ERROR_LOG_INTERVAL_MS = 10_000;

/**
 * BullMQ workers block on Redis and must not fail a command after N retries
 * (maxRetriesPerRequest: null); every connection we make uses the same settings, and logs its
 * connection errors (throttled) instead of leaving them unhandled.
 */
export function connectRedis(url: string, name: string, log?: Logger): Redis {
  const redis = isClusterUrl(url) ? clusterClient(url, name) : new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: name });
  let lastLogged = 0;
  redis.on('error', (err: Error) => {
    if (Date.now() - lastLogged < ERROR_LOG_INTERVAL_MS) return;
    lastLogged = Date.now();
    log?.warn({ connection: name, err: err.message }, 'redis connection error; reconnecting');
  });
  return redis;
}

/** `redis+cluster://host:port` names a seed node of a Redis Cluster (the client discovers the others). */
export function isClusterUrl(url: string): boolean {
  return url.startsWith('redis+cluster://') || url.startsWith('rediss+cluster://');
}

/**
 * A Redis Cluster client typed as a plain client: every key we (and BullMQ) touch carries the
 * QUEUE_PREFIX hash tag, so all commands and scripts of a session run in one slot.
 */
function clusterClient(url: string, name: string): Redis {
  const u = new URL(url.replace('+cluster', ''));
  const cluster = new Cluster([{ host: u.hostname, port: Number(u.port || 6379) }], {
    redisOptions: {
      maxRetriesPerRequest: null,
      connectionName: name,
      ...(u.password && { password: decodeURIComponent(u.password) }),
      ...(u.username && { username: decodeURIComponent(u.username) }),
      ...(u.protocol === 'rediss:' && { tls: {} }),
    },
  });
  return cluster as unknown as Redis;
}
