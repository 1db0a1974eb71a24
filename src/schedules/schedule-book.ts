import { Queue, type JobsOptions, type RepeatOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { InboundMessage } from '../channels/types.js';
import { sessionKeyOf } from '../channels/session-key.js';
import type { Logger } from '../log.js';
import { ScheduleStore, type Schedule, type ScheduleOrigin } from './schedule-store.js';
import { parseWhen, type ScheduleSpec } from './when.js';

/** The BullMQ queue the job schedulers add one job per firing to (beside the runs queue, same prefix). */
export const FIRINGS_QUEUE = 'firings';

export interface FiringJobData {
  v: 1;
  scheduleId: string;
}

export type FiringQueue = Queue<FiringJobData>;

const FIRING_JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 2_000 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 2_000 },
  removeOnFail: { age: 14 * 24 * 3600, count: 2_000 },
};

export interface ScheduleOptions {
  /** SCHEDULES_PER_USER: schedules one person may have at once (paused ones count). */
  perUser: number;
  /** Firings closer together are refused. */
  minIntervalMs: number;
}

/** A schedule as listed: its record and its next firing (none while paused). */
export type ScheduleView = Schedule & { next?: number };

export interface ScheduleRequest {
  when: string;
  timezone: string | undefined;
  prompt: string;
  name?: string | undefined;
}

export type CreateOutcome = { ok: true; schedule: ScheduleView } | { ok: false; error: string };
export type RemoveOutcome = 'removed' | 'not_found' | 'not_yours';

const NAME_MAX = 80;

export function createFiringQueue(prefix: string, connection: Redis, log?: Logger): FiringQueue {
  const queue = new Queue<FiringJobData>(FIRINGS_QUEUE, { connection, prefix });
  queue.on('error', (err) => log?.debug({ err: err.message }, 'firings queue error'));
  return queue;
}

/** What a scheduled turn is asked from: the conversation and its maker, without the platform's one-time reply credentials. */
export function originOf(message: InboundMessage): ScheduleOrigin {
  const meta = Object.fromEntries(Object.entries(message.meta ?? {}).filter(([k]) => KEPT_META.has(k)));
  return {
    platform: message.platform,
    conversation: message.conversation,
    ...(message.thread !== undefined && { thread: message.thread }),
    sender: message.sender,
    ...(message.where && { where: message.where }),
    ...(Object.keys(meta).length > 0 && { meta }),
  };
}
/** Meta that says where a conversation is (kept); the rest (interaction tokens, how a command was typed) belongs to one message. */
const KEPT_META = new Set(['dm', 'guildId']);

/** BullMQ's repeat options for a schedule from `now` (a one-off whose time passed while paused fires at once). */
function repeatOf(spec: ScheduleSpec, now: number): RepeatOptions {
  if (spec.kind === 'cron') return { pattern: spec.pattern, tz: spec.tz };
  if (spec.at <= now) return { pattern: spec.pattern, tz: spec.tz, limit: 1, immediately: true };
  return { pattern: spec.pattern, tz: spec.tz, limit: 1, startDate: spec.at - 1_000 };
}

/**
 * The schedules: each is a record (schedule-store.ts) and a BullMQ job scheduler of the same id
 * on the firings queue, which adds one job per firing (its id names the firing time, so BullMQ
 * adds it once however many workers run). Records are written first and removed first: a
 * scheduler without a record is removed by its next firing.
 */
export class ScheduleBook {
  readonly store: ScheduleStore;

  constructor(
    redis: Redis,
    prefix: string,
    readonly queue: FiringQueue,
    private readonly options: ScheduleOptions,
  ) {
    this.store = new ScheduleStore(redis, prefix);
  }

  get perUser(): number {
    return this.options.perUser;
  }

  async create(from: InboundMessage, request: ScheduleRequest, now = Date.now()): Promise<CreateOutcome> {
    const prompt = request.prompt.trim();
    if (prompt === '') return { ok: false, error: 'The prompt is empty: say what should be done at each firing.' };
    const parsed = parseWhen(request.when, request.timezone, { now, minIntervalMs: this.options.minIntervalMs });
    if (!parsed.ok) return parsed;
    const origin = originOf(from);
    const name = (request.name?.trim() || prompt).replace(/\s+/g, ' ').slice(0, NAME_MAX);
    const created = await this.store.create(
      {
        v: 1,
        name,
        session: sessionKeyOf(from),
        owner: `${from.platform}:${from.sender.id}`,
        prompt,
        when: request.when.trim(),
        spec: parsed.spec,
        origin,
        createdAt: now,
      },
      this.options.perUser,
    );
    if (created.kind === 'limit') {
      return {
        ok: false,
        error: `This person already has ${created.count} schedules, the most allowed (SCHEDULES_PER_USER=${this.options.perUser}): cancel one first (/schedules lists them, /unschedule <id> removes one).`,
      };
    }
    const { schedule } = created;
    try {
      await this.arm(schedule, now);
    } catch (err) {
      await this.store.remove(schedule);
      throw err;
    }
    return { ok: true, schedule: { ...schedule, next: parsed.next[0]! } };
  }

  async get(id: string): Promise<ScheduleView | undefined> {
    const schedule = await this.store.get(id);
    if (!schedule) return undefined;
    const scheduler = schedule.state === 'active' ? await this.queue.getJobScheduler(id) : undefined;
    return withNext(schedule, scheduler?.next ?? undefined);
  }

  async ofSession(session: string): Promise<ScheduleView[]> {
    // A conversation has a few schedules: each job scheduler is looked up by its id.
    const schedules = await this.store.ofSession(session);
    const next = new Map(
      await Promise.all(schedules.filter(isActive).map(async (s) => [s.id, (await this.queue.getJobScheduler(s.id))?.next ?? undefined] as const)),
    );
    return schedules.map((s) => withNext(s, isActive(s) ? next.get(s.id) : undefined));
  }

  /** Every schedule (the admin API): one read of all job schedulers. */
  async all(): Promise<ScheduleView[]> {
    const schedules = await this.store.all();
    if (schedules.length === 0) return [];
    const next = new Map((await this.queue.getJobSchedulers()).map((s) => [s.key, s.next ?? undefined]));
    return schedules.map((s) => withNext(s, isActive(s) ? next.get(s.id) : undefined));
  }

  /**
   * Removes a schedule of the conversation `by` was said in. Its maker may; in a group, so may an
   * approver (APPROVERS); anyone may in a DM (only its owner is there).
   */
  async cancel(id: string, by: InboundMessage, approvers: readonly string[]): Promise<{ outcome: RemoveOutcome; schedule?: Schedule }> {
    const schedule = await this.store.get(id.trim().toLowerCase());
    if (!schedule || schedule.session !== sessionKeyOf(by)) return { outcome: 'not_found' };
    const who = `${by.platform}:${by.sender.id}`;
    if (schedule.owner !== who && !approvers.includes(who) && by.where?.kind === 'group') return { outcome: 'not_yours', schedule };
    await this.remove(schedule);
    return { outcome: 'removed', schedule };
  }

  /** Gone for good: the record first, then its job scheduler. */
  async remove(schedule: Pick<Schedule, 'id' | 'session' | 'owner'>): Promise<boolean> {
    const removed = await this.store.remove(schedule);
    await this.queue.removeJobScheduler(schedule.id);
    return removed;
  }

  /** No more firings until resumed (the job scheduler is removed; the record stays). */
  async pause(id: string, by: 'failures' | 'operator'): Promise<Schedule | undefined> {
    const changed = await this.store.setState(id, 'paused', by);
    if (changed === 'none') return undefined;
    await this.queue.removeJobScheduler(id);
    return this.store.get(id);
  }

  /** Fires again from now on, its failure count cleared; a missed one-off fires at once. */
  async resume(id: string, now = Date.now()): Promise<ScheduleView | undefined> {
    const changed = await this.store.setState(id, 'active');
    if (changed === 'none') return undefined;
    const schedule = await this.store.get(id);
    if (!schedule) return undefined;
    await this.arm(schedule, now);
    return this.get(id);
  }

  private async arm(schedule: Schedule, now: number): Promise<void> {
    await this.queue.upsertJobScheduler(schedule.id, repeatOf(schedule.spec, now), {
      name: `fire ${schedule.id}: ${schedule.name}`,
      data: { v: 1, scheduleId: schedule.id },
      opts: FIRING_JOB_OPTIONS,
    });
  }
}

function withNext(schedule: Schedule, next: number | undefined): ScheduleView {
  return next === undefined || !Number.isFinite(next) ? schedule : { ...schedule, next };
}

const isActive = (s: Schedule): boolean => s.state === 'active';
