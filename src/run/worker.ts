import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { QueueConfig } from '../config/config.js';
import { ActiveRuns } from './active-runs.js';
import { connectRedis } from '../queue/connection.js';
import { createProcessor, type RunDeps } from './processor.js';
import { reconcile } from '../queue/reconciler.js';
import type { RunJobData, RunResult } from '../queue/job-data.js';

export interface RunWorker {
  worker: Worker<RunJobData, RunResult>;
  active: ActiveRuns;
  close(force?: boolean): Promise<void>;
}

/**
 * A worker process's share of the queue: the BullMQ worker running agent runs, the listener
 * that aborts a run on /stop or on the loss of its job lock, and the periodic reconciler.
 */
export async function startRunWorker(redisUrl: string, config: QueueConfig, deps: Omit<RunDeps, 'active'>): Promise<RunWorker> {
  const active = new ActiveRuns();
  const log = deps.log;
  const worker = new Worker<RunJobData, RunResult>(config.name, createProcessor({ ...deps, active }), {
    connection: connectRedis(redisUrl, 'switchboard-worker', log),
    prefix: config.prefix,
    concurrency: config.concurrency,
    lockDuration: config.lockDurationMs,
    stalledInterval: config.stalledIntervalMs,
    maxStalledCount: 2,
  });
  // A lost lock does not abort a BullMQ processor by itself; the run must stop at its next boundary.
  worker.on('lockRenewalFailed', (jobIds: string[]) => {
    log.error({ jobIds }, 'job lock renewal failed; aborting those runs');
    active.abortJobs(jobIds, 'lock_lost');
  });
  worker.on('failed', (job, err) => log.info({ jobId: job?.id, session: job?.data.session, reason: err.message }, 'job failed'));
  worker.on('error', (err) => log.error({ err }, 'worker error'));

  const subscriber: Redis = connectRedis(redisUrl, 'switchboard-cancel', log);
  await subscriber.subscribe(deps.keys.cancelChannel);
  subscriber.on('message', (_channel: string, session: string) => {
    if (active.abortSession(session, 'cancelled')) log.info({ session }, 'run cancelled on request');
  });

  const timer = setInterval(() => {
    reconcile(deps.redis, deps.queue, deps.keys, log).catch((err: unknown) => log.error({ err }, 'reconcile failed'));
  }, config.reconcileIntervalMs);
  timer.unref();
  await worker.waitUntilReady();

  return {
    worker,
    active,
    /**
     * Graceful: no new jobs; active runs stop at their next step boundary and go back to waiting
     * (another worker resumes them from the journal) or finish delivering. Forced: active runs
     * are left to expire their locks and be resumed elsewhere.
     */
    async close(force = false) {
      clearInterval(timer);
      const closed = worker.close(force);
      if (!force) active.suspendAll();
      await closed;
      subscriber.disconnect();
    },
  };
}
