import type { Redis } from 'ioredis';
import type { InboundMessage } from '../channels/types.js';
import { sessionKeyOf } from '../channels/session-key.js';
import { SessionKeys } from './keys.js';
import { runScript } from './redis-scripts.js';
import { ENQUEUE } from './scripts.js';
import { addRunJob, type RunQueue } from './run-queue.js';
import { forDisplay, jobName } from './job-data.js';

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
  ) {}

  /**
   * `maxWaiting`: refuse (status `full`) when the session already has this many messages waiting
   * (the ones its running turn has taken do not count); 0 or absent: no cap.
   */
  async enqueue(message: InboundMessage, maxWaiting = 0): Promise<EnqueueResult> {
    const session = sessionKeyOf(message);
    const k = this.keys;
    const result = await runScript(this.redis, ENQUEUE, {
      keys: { seen: k.seen(message.platform, message.eventId), inbox: k.inbox(session), pending: k.pending, taken: k.taken(session) },
      args: {
        // A lone UTF-16 surrogate (valid in JSON.stringify's output, refused by Redis' cjson) becomes U+FFFD here.
        message: JSON.stringify(message, (_key, value: unknown) => (typeof value === 'string' ? value.toWellFormed() : value)),
        seenTtl: SEEN_TTL_SECONDS,
        session,
        max: maxWaiting,
      },
    });
    if (result.kind !== 'queued') return { status: result.kind, session };
    await addRunJob(this.queue, jobName(message), { v: 1, session, trigger: forDisplay(message) });
    return { status: 'queued', session, position: result.length };
  }
}
