import type { Redis } from 'ioredis';
import type { SessionKeys } from '../queue/keys.js';
import { redact } from './redis-bootstrap.js';

/** How long a queued chat message may wait for a worker before the person is told what to check. */
export const UNTAKEN_AFTER_MS = 10_000;

/**
 * Tells the person once, when a message they sent has not been taken by any worker after
 * UNTAKEN_AFTER_MS (no run owns the session): the chat keeps waiting, since a worker may still come.
 */
export class ListeningWatch {
  private warned = false;

  constructor(
    private readonly redis: Redis,
    private readonly keys: SessionKeys,
    private readonly where: { redisUrl: string; prefix: string },
    private readonly tell: (text: string) => void,
    private readonly afterMs = UNTAKEN_AFTER_MS,
  ) {}

  /** Watches one queued message until `done` settles. */
  watch(session: string, done: Promise<unknown>): void {
    if (this.warned) return;
    const timer = setTimeout(() => void this.check(session), this.afterMs);
    timer.unref();
    void done.finally(() => clearTimeout(timer));
  }

  private async check(session: string): Promise<void> {
    if (this.warned) return;
    const taken = (await this.redis.exists(this.keys.owner(session)).catch(() => 1)) === 1;
    if (taken) return;
    this.warned = true;
    this.tell(
      `(No worker has taken this message after ${Math.round(this.afterMs / 1000)} s. Check that a worker runs with REDIS_URL=${redact(this.where.redisUrl)} and QUEUE_PREFIX=${this.where.prefix} (\`npm run worker\`), or run the chat without --no-worker to start one here. Still waiting.)`,
    );
  }
}
