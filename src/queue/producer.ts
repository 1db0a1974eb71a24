import type { Redis } from 'ioredis';
import type { InboundMessage } from '../channels/types.js';
import { sessionKeyOf } from '../channels/session-key.js';
import { SessionKeys } from './keys.js';
import { defineScript, runScript } from './redis-scripts.js';
import { addRunJob, type RunQueue } from './run-queue.js';
import { forDisplay, jobName } from './job-data.js';

export type Enqueued = { kind: 'queued'; length: number } | { kind: 'duplicate' | 'full' };

// → the inbox length, -1 (a duplicate event) or -2 (full: `max` messages wait already; not queued,
// not marked seen). Waiting messages are the inbox less the head the running turn has taken.
export const ENQUEUE = defineScript({
  name: 'sbEnqueue',
  keys: ['seen', 'inbox', 'pending', 'taken', 'agent'],
  args: ['message', 'seenTtl', 'session', 'max', 'agent'],
  lua: `
if not redis.call('SET', KEYS[1], '1', 'EX', ARGV[2], 'NX') then return -1 end
local max = tonumber(ARGV[4])
if max > 0 and redis.call('LLEN', KEYS[2]) - tonumber(redis.call('GET', KEYS[4]) or '0') >= max then
  -- Refused, so not seen: the platform's redelivery may find room.
  redis.call('DEL', KEYS[1])
  return -2
end
local length = redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[3])
-- The session's agent is decided by its first message (a session that has one keeps it).
if ARGV[5] ~= '' then redis.call('SET', KEYS[5], ARGV[5], 'NX') end
return length
`,
  decode: (reply, unexpected): Enqueued =>
    reply === -1
      ? { kind: 'duplicate' }
      : reply === -2
        ? { kind: 'full' }
        : typeof reply === 'number' && reply > 0
          ? { kind: 'queued', length: reply }
          : unexpected(),
});

/** How long a platform event id is remembered for de-duplication of redeliveries. */
export const SEEN_TTL_SECONDS = 24 * 3600;

export type EnqueueResult = { status: 'queued'; session: string; position: number } | { status: 'duplicate' | 'full'; session: string };

/**
 * The gateway's half of the queue. The message is appended to its session's inbox and marked
 * seen in one script (a redelivered event is dropped only once its first copy is in the inbox),
 * then the run job is added. A crash between the two leaves the session in the pending set,
 * where the reconciler finds it.
 */
export class Producer {
  constructor(
    private readonly redis: Redis,
    private readonly queue: RunQueue,
    private readonly keys: SessionKeys,
    /** The agent the bindings give a session this message would start (AGENTS_CONFIG); absent: the worker decides. */
    private readonly agentFor?: (message: InboundMessage) => string,
  ) {}

  /**
   * `maxWaiting`: refuse (status `full`) when the session already has this many messages waiting
   * (the ones its running turn has taken do not count); 0 or absent: no cap.
   */
  async enqueue(message: InboundMessage, maxWaiting = 0): Promise<EnqueueResult> {
    const session = sessionKeyOf(message);
    const k = this.keys;
    const result = await runScript(this.redis, ENQUEUE, {
      keys: {
        seen: k.seen(message.platform, message.eventId),
        inbox: k.inbox(session),
        pending: k.pending,
        taken: k.taken(session),
        agent: k.agentOf(session),
      },
      args: {
        // A lone UTF-16 surrogate (valid in JSON.stringify's output, refused by Redis' cjson) becomes U+FFFD here.
        message: JSON.stringify(message, (_key, value: unknown) => (typeof value === 'string' ? value.toWellFormed() : value)),
        seenTtl: SEEN_TTL_SECONDS,
        session,
        max: maxWaiting,
        agent: this.agentFor?.(message) ?? '',
      },
    });
    if (result.kind !== 'queued') return { status: result.kind, session };
    await addRunJob(this.queue, jobName(message), { v: 1, session, trigger: forDisplay(message) });
    return { status: 'queued', session, position: result.length };
  }
}
