import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import type { QueueConfig } from '../config/config.js';
import type { RunJobData, RunResult } from './job-data.js';

export type RunQueue = Queue<RunJobData, RunResult>;

/**
 * Job options of every run. Attempts cover infrastructure faults (Redis blips, a reply the
 * platform refused for now): the agent's own failures are terminal and thrown as UnrecoverableError.
 */
export const RUN_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 2_000 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 5_000 },
  removeOnFail: { age: 14 * 24 * 3600, count: 10_000 },
};

export function createRunQueue(config: QueueConfig, connection: Redis, log?: Logger): RunQueue {
  const queue = new Queue<RunJobData, RunResult>(config.name, { connection, prefix: config.prefix });
  // Connection errors are already logged (throttled) by the connection itself.
  queue.on('error', (err) => log?.debug({ err: err.message }, 'queue error'));
  return queue;
}

/**
 * Adds the session's run job. De-duplicated by session: while a run waits, the add is absorbed
 * (the waiting run reads the whole inbox); while a run is active, it is kept and created when
 * that run finishes (keepLastIfActive), so a message racing the end of a run always gets a run.
 */
export async function addRunJob(queue: RunQueue, name: string, data: RunJobData): Promise<void> {
  await queue.add(name, data, { ...RUN_JOB_OPTIONS, deduplication: { id: data.session, keepLastIfActive: true } });
}
