import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import type { SessionKeys } from './keys.js';
import { addRunJob, type RunQueue } from './run-queue.js';

const LIVE_STATES = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children']);

/**
 * Finds sessions that have waiting messages or an undelivered reply but no run job — the gateway
 * died between the inbox append and the job add, or the session's job failed for good (out of
 * attempts, stalled too often, removed by an operator) — and adds their run job. Adding is de-duplicated by
 * session, so a session that does have a job is left as it is.
 */
export async function reconcile(redis: Redis, queue: RunQueue, keys: SessionKeys, log: Logger): Promise<number> {
  let added = 0;
  let cursor = '0';
  do {
    const [next, sessions] = await redis.sscan(keys.pending, cursor, 'COUNT', 200);
    cursor = next;
    for (const session of sessions) {
      const holder = await redis.get(keys.deduplication(session));
      if (holder !== null && LIVE_STATES.has(await queue.getJobState(holder))) continue;
      if (holder !== null) await queue.removeDeduplicationKey(session);
      const [waiting, reply] = await Promise.all([redis.llen(keys.inbox(session)), redis.exists(keys.outbox(session))]);
      if (waiting === 0 && reply === 0) {
        await redis.srem(keys.pending, session);
        continue;
      }
      await addRunJob(queue, `reconcile ${session}`, { v: 1, session });
      added += 1;
      log.warn({ session, waiting, undeliveredReply: reply === 1 }, 'reconciler re-enqueued a session with work and no run job');
    }
  } while (cursor !== '0');
  return added;
}
