import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { InboundMessage } from '../channels/types.js';
import type { Logger } from '../log.js';
import type { QueueConfig } from '../config/config.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Producer } from '../queue/producer.js';
import { FIRINGS_QUEUE, type FiringJobData, type ScheduleBook } from '../schedules/schedule-book.js';
import type { Schedule } from '../schedules/schedule-store.js';

export type FiringOutcome = 'queued' | 'duplicate' | 'queue_full' | 'deleted' | 'paused' | 'refused';
/** How a firing ended, as counted: its turn's end (outcome.ts), or why it never became one. */
export type FiringMetricOutcome = 'completed' | 'failed' | 'cancelled' | 'undeliverable' | Exclude<FiringOutcome, 'queued'>;

/** The firing time a scheduler's job stands for: its id is `repeat:<scheduler id>:<ms>` (BullMQ's), else when it was added. */
export function firingTime(job: Pick<Job, 'id' | 'timestamp'>): number {
  const match = /:(\d+)$/.exec(job.id ?? '');
  return match ? Number(match[1]) : job.timestamp;
}

/**
 * The turn a firing asks for: the schedule's prompt in the conversation it was made in, from
 * its maker. The message and event ids name the firing, so the inbox takes it once however
 * often the firing job runs (a stalled job run again, a retry).
 */
export function firingMessage(schedule: Schedule, firedAt: number, now: number): InboundMessage {
  const id = `sched-${schedule.id}-${firedAt}`;
  const { origin } = schedule;
  return {
    v: 1,
    id,
    platform: origin.platform,
    conversation: origin.conversation,
    ...(origin.thread !== undefined && { thread: origin.thread }),
    sender: origin.sender,
    ...(origin.where && { where: origin.where }),
    text: schedule.prompt,
    attachments: [],
    eventId: id,
    receivedAt: now,
    ...(origin.meta && { meta: origin.meta }),
    scheduled: { id: schedule.id, name: schedule.name, firedAt, tz: schedule.spec.tz },
  };
}

export interface FiringDeps {
  book: ScheduleBook;
  producer: Producer;
  /** Access control as it is now: a maker who lost access (revoked, removed from ALLOWED_USERS) is not answered. */
  access?: { stillAllows(message: InboundMessage): Promise<boolean> };
  /** SESSION_QUEUE_MAX: a firing into a conversation with this many messages waiting is not queued (and counts as failed). */
  queueMax: number;
  log: Logger;
  metrics?: Metrics;
}

/** One firing job: the schedule's turn goes into its conversation's inbox like a message would. */
export function createFiringProcessor(deps: FiringDeps): (job: Job<FiringJobData>) => Promise<{ outcome: FiringOutcome; messageId?: string }> {
  return async (job) => {
    const { book, log } = deps;
    const id = job.data.scheduleId;
    const firedAt = firingTime(job);
    const count = (outcome: FiringMetricOutcome) => deps.metrics?.scheduleFirings.inc({ outcome });
    const schedule = await book.store.get(id);
    if (!schedule) {
      // Removed while its scheduler lived on (a crash between the two removals): it stops here.
      await book.queue.removeJobScheduler(id);
      log.info({ scheduleId: id, firedAt }, 'firing of a removed schedule dropped');
      count('deleted');
      return { outcome: 'deleted' };
    }
    if (schedule.state !== 'active') {
      log.info({ scheduleId: id, firedAt }, 'firing of a paused schedule dropped');
      count('paused');
      return { outcome: 'paused' };
    }
    const message = firingMessage(schedule, firedAt, Date.now());
    const flog = log.child({ scheduleId: id, session: schedule.session, messageId: message.id });
    if (deps.access && !(await deps.access.stillAllows(message))) {
      // A recurring one is kept: it fires again once its maker has access again.
      flog.warn({ owner: schedule.owner }, 'schedule firing dropped: its maker may no longer talk here');
      count('refused');
      if (schedule.spec.kind === 'once') await book.remove(schedule);
      return { outcome: 'refused' };
    }
    const result = await deps.producer.enqueue(message, deps.queueMax);
    if (result.status === 'full') {
      flog.warn({ max: deps.queueMax }, 'scheduled turn not queued: the conversation has too many messages waiting');
      count('queue_full');
      if ((await book.store.outcome(id, message.id, 'failed', 'queue_full', Date.now())) === 'paused') await book.pause(id, 'failures');
      return { outcome: 'queue_full' };
    }
    if (result.status === 'queued') await book.store.fired(id, firedAt);
    else count('duplicate');
    // A one-off is done once its turn is queued: it leaves the list (its run still answers).
    if (schedule.spec.kind === 'once') await book.remove(schedule);
    flog.info({ firedAt, status: result.status }, result.status === 'queued' ? 'schedule fired' : 'schedule firing already queued');
    return { outcome: result.status, messageId: message.id };
  };
}

export interface FiringWorker {
  close(force?: boolean): Promise<void>;
}

/**
 * The worker process's share of the firings: any number of workers, each firing handled once
 * (BullMQ's lock, then the inbox's event id). It owns `connection` and closes it.
 */
export async function startFiringWorker(
  connection: Redis,
  queue: Pick<QueueConfig, 'prefix' | 'lockDurationMs' | 'stalledIntervalMs'>,
  deps: FiringDeps,
): Promise<FiringWorker> {
  const worker = new Worker<FiringJobData>(FIRINGS_QUEUE, createFiringProcessor(deps), {
    connection,
    prefix: queue.prefix,
    concurrency: 4,
    // A firing a dead worker held is taken again as soon as a run would be.
    lockDuration: queue.lockDurationMs,
    stalledInterval: queue.stalledIntervalMs,
  });
  worker.on('failed', (job, err) => deps.log.warn({ jobId: job?.id, scheduleId: job?.data.scheduleId, err: err.message }, 'firing job failed'));
  worker.on('error', (err) => deps.log.error({ err }, 'firings worker error'));
  await worker.waitUntilReady();
  return {
    async close(force = false) {
      await worker.close(force);
      connection.disconnect();
    },
  };
}
