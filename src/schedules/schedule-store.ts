import { randomInt } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { InboundMessage } from '../channels/types.js';
import { RedisKeys } from '../queue/keys.js';
import { byCode, defineScript, runScript } from '../queue/redis-scripts.js';
import type { ScheduleSpec } from './when.js';

/** Firings in a row that failed before a schedule is paused (and its maker told, once). */
export const PAUSE_AFTER_FAILURES = 3;

/** Where a firing's turn is asked and answered: the conversation and thread the schedule was made in, as its maker. */
export type ScheduleOrigin = Pick<InboundMessage, 'platform' | 'conversation' | 'thread' | 'sender' | 'where' | 'meta'>;

/** What a schedule is; fixed when it is made. */
export interface ScheduleDefinition {
  v: 1;
  id: string;
  name: string;
  /** The session key of the conversation it belongs to. */
  session: string;
  /** `platform:userId` of the person who made it (SCHEDULES_PER_USER counts these). */
  owner: string;
  prompt: string;
  /** As the model gave it (a cron expression or an ISO date-time). */
  when: string;
  spec: ScheduleSpec;
  origin: ScheduleOrigin;
  createdAt: number;
}

export type ScheduleState = 'active' | 'paused';

/** A schedule with what has happened to it. */
export interface Schedule extends ScheduleDefinition {
  state: ScheduleState;
  /** Why it is paused: its firings kept failing, or an operator paused it. */
  pausedBy?: 'failures' | 'operator';
  /** Firings in a row that failed. */
  failures: number;
  firings: number;
  lastFiredAt?: number;
  lastOutcome?: string;
}

// → {1} created · {-1, count} the owner has `max` already · {-2} the id is taken (pick another)
const CREATE = defineScript({
  name: 'sbScheduleCreate',
  keys: ['schedule', 'all', 'session', 'owner'],
  args: ['id', 'definition', 'max'],
  lua: `
local count = redis.call('SCARD', KEYS[4])
if count >= tonumber(ARGV[3]) then return {-1, count} end
if redis.call('EXISTS', KEYS[1]) == 1 then return {-2} end
redis.call('HSET', KEYS[1], 'def', ARGV[2], 'state', 'active', 'failures', 0, 'firings', 0)
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
return {1}
`,
  decode: (reply, unexpected): { kind: 'created' } | { kind: 'limit'; count: number } | { kind: 'taken' } => {
    const [code, count] = Array.isArray(reply) ? reply : [];
    if (code === 1) return { kind: 'created' };
    if (code === -1 && typeof count === 'number') return { kind: 'limit', count };
    return code === -2 ? { kind: 'taken' } : unexpected();
  },
});

// `verdict`: 'ok' / 'failed' / 'neutral' (a person stopped it: the count stays); `pauseAfter`: failures in a row that pause it.
// → 0 no such schedule or this firing was already counted · 1 counted · 2 counted, and it is paused now
// (only the run that crosses the threshold gets 2: the maker is told once).
const OUTCOME = defineScript({
  name: 'sbScheduleOutcome',
  keys: ['schedule'],
  args: ['firing', 'verdict', 'outcome', 'at', 'pauseAfter'],
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'lastFiring') == ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'lastFiring', ARGV[1], 'lastOutcome', ARGV[3], 'lastOutcomeAt', ARGV[4])
if ARGV[2] == 'ok' then
  redis.call('HSET', KEYS[1], 'failures', 0)
  return 1
end
if ARGV[2] == 'neutral' then return 1 end
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if failures >= tonumber(ARGV[5]) and redis.call('HGET', KEYS[1], 'state') == 'active' then
  redis.call('HSET', KEYS[1], 'state', 'paused', 'pausedBy', 'failures')
  return 2
end
return 1
`,
  decode: byCode({ 0: 'none', 1: 'counted', 2: 'paused' }),
});

// `pausedBy`: '' when active. → 0 no such schedule · 1 changed · 2 already so
const SET_STATE = defineScript({
  name: 'sbScheduleState',
  keys: ['schedule'],
  args: ['state', 'pausedBy'],
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local was = redis.call('HGET', KEYS[1], 'state')
if ARGV[1] == 'active' then
  redis.call('HSET', KEYS[1], 'state', 'active', 'failures', 0)
  redis.call('HDEL', KEYS[1], 'pausedBy')
else
  redis.call('HSET', KEYS[1], 'state', ARGV[1], 'pausedBy', ARGV[2])
end
if was == ARGV[1] then return 2 end
return 1
`,
  decode: byCode({ 0: 'none', 1: 'changed', 2: 'already' }),
});

/** Whether a firing counts toward pausing its schedule. */
export type Verdict = 'ok' | 'failed' | 'neutral';

/** Ids a person can type: 6 characters without look-alikes (0/o, 1/l/i). */
const ID_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
export function newScheduleId(): string {
  return Array.from({ length: 6 }, () => ID_ALPHABET[randomInt(ID_ALPHABET.length)]).join('');
}

/**
 * The schedules' records in Redis: `{prefix}:schedule:<id>` (a hash: the definition as JSON and
 * the counters), indexed by `{prefix}:schedules` (all), `{prefix}:s:<session>:schedules` (the
 * conversation's) and `{prefix}:schedules:owner:<platform:userId>` (its maker's). When each fires
 * is BullMQ's job scheduler of the same id (schedule-book.ts keeps the two together).
 */
export class ScheduleStore {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = new RedisKeys(prefix);
  }

  private key(id: string): string {
    return this.keys.schedule(id);
  }
  private get allKey(): string {
    return this.keys.schedules;
  }
  private sessionKey(session: string): string {
    return this.keys.sessionSchedules(session);
  }
  private ownerKey(owner: string): string {
    return this.keys.ownerSchedules(owner);
  }

  /** Stores a new schedule unless its owner already has `max` (the check and the add are one script). */
  async create(def: Omit<ScheduleDefinition, 'id'>, max: number): Promise<{ kind: 'created'; schedule: Schedule } | { kind: 'limit'; count: number }> {
    for (;;) {
      const id = newScheduleId();
      const full: ScheduleDefinition = { ...def, id };
      const result = await runScript(this.redis, CREATE, {
        keys: { schedule: this.key(id), all: this.allKey, session: this.sessionKey(def.session), owner: this.ownerKey(def.owner) },
        args: { id, definition: JSON.stringify(full), max },
      });
      if (result.kind === 'limit') return result;
      if (result.kind === 'created') return { kind: 'created', schedule: { ...full, state: 'active', failures: 0, firings: 0 } };
    }
  }

  async get(id: string): Promise<Schedule | undefined> {
    if (!/^[a-z0-9]{1,32}$/.test(id)) return undefined;
    return parseSchedule(await this.redis.hgetall(this.key(id)));
  }

  /** The conversation's schedules, oldest first. */
  async ofSession(session: string): Promise<Schedule[]> {
    return this.many(await this.redis.smembers(this.sessionKey(session)));
  }

  async all(): Promise<Schedule[]> {
    return this.many(await this.redis.smembers(this.allKey));
  }

  private async many(ids: string[]): Promise<Schedule[]> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.key(id));
    const rows = (await pipeline.exec()) ?? [];
    return rows
      .map(([, row]) => parseSchedule(row as Record<string, string>))
      .filter((s): s is Schedule => s !== undefined)
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  /** Forgets a schedule and its index entries; false when there was none. */
  async remove(schedule: Pick<ScheduleDefinition, 'id' | 'session' | 'owner'>): Promise<boolean> {
    const [[, deleted] = []] =
      (await this.redis
        .multi()
        .del(this.key(schedule.id))
        .srem(this.allKey, schedule.id)
        .srem(this.sessionKey(schedule.session), schedule.id)
        .srem(this.ownerKey(schedule.owner), schedule.id)
        .exec()) ?? [];
    return deleted === 1;
  }

  /** `none`: no such schedule · `already`: it already was in that state. */
  async setState(id: string, state: ScheduleState, pausedBy?: 'failures' | 'operator'): Promise<'none' | 'changed' | 'already'> {
    return runScript(this.redis, SET_STATE, { keys: { schedule: this.key(id) }, args: { state, pausedBy: pausedBy ?? '' } });
  }

  /** One more firing happened (counted when it is enqueued). */
  async fired(id: string, at: number): Promise<void> {
    if ((await this.redis.exists(this.key(id))) === 0) return;
    await this.redis.multi().hincrby(this.key(id), 'firings', 1).hset(this.key(id), 'lastFiredAt', at).exec();
  }

  /**
   * How a firing's turn ended, counted once per firing however often it is reported (a run
   * that re-delivers a reply after a crash reports again). `paused`: this report paused it.
   */
  async outcome(id: string, firing: string, verdict: Verdict, outcome: string, at: number): Promise<'none' | 'counted' | 'paused'> {
    return runScript(this.redis, OUTCOME, { keys: { schedule: this.key(id) }, args: { firing, verdict, outcome, at, pauseAfter: PAUSE_AFTER_FAILURES } });
  }
}

function parseSchedule(row: Record<string, string> | null | undefined): Schedule | undefined {
  if (!row?.def) return undefined;
  const def = JSON.parse(row.def) as ScheduleDefinition;
  return {
    ...def,
    state: row.state === 'paused' ? 'paused' : 'active',
    ...(row.pausedBy === 'failures' || row.pausedBy === 'operator' ? { pausedBy: row.pausedBy } : {}),
    failures: Number(row.failures ?? 0),
    firings: Number(row.firings ?? 0),
    ...(row.lastFiredAt !== undefined && { lastFiredAt: Number(row.lastFiredAt) }),
    ...(row.lastOutcome !== undefined && { lastOutcome: row.lastOutcome }),
  };
}
