import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { RedisKeys } from './keys.js';

/** A worker counts as running while its last beat is younger than this (it beats every BEAT_EVERY_MS). */
const ALIVE_MS = 15_000;
const BEAT_EVERY_MS = 5_000;

const key = (prefix: string) => new RedisKeys(prefix).workers;

/**
 * The workers of this queue, each a member of one sorted set under QUEUE_PREFIX scored by when
 * it last beat. BullMQ counts workers from CLIENT LIST, which spans every database and prefix of
 * a Redis server: a worker of another Switchboard on the same server would count as ours.
 */
export class WorkerHeartbeat {
  readonly id = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly onError: (err: unknown) => void,
  ) {}

  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat().catch(this.onError), BEAT_EVERY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.redis.zrem(key(this.prefix), this.id).catch(this.onError);
  }

  private async beat(): Promise<void> {
    await this.redis.zadd(key(this.prefix), Date.now(), this.id);
  }
}

/** How many workers of this queue beat recently; a dead worker's entry is dropped here. */
export async function countWorkers(redis: Redis, prefix: string, now = Date.now()): Promise<number> {
  await redis.zremrangebyscore(key(prefix), '-inf', now - ALIVE_MS);
  return redis.zcard(key(prefix));
}
