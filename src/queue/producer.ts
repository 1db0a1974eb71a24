import type { Redis } from 'ioredis';
import type { InboundMessage } from '../channels/types.js';
import { sessionKeyOf } from '../channels/session-key.js';
import { SessionKeys } from './keys.js';
import { withSessionScripts, type ScriptedRedis } from './scripts.js';
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
  private readonly redis: ScriptedRedis;

  constructor(
    redis: Redis,
    private readonly queue: RunQueue,
    private readonly keys: SessionKeys,
  ) {
    this.redis = withSessionScripts(redis);
  }

  /** `maxWaiting`: refuse (status `full`) when the session already has this many messages waiting; 0 or absent: no cap. */
  async enqueue(message: InboundMessage, maxWaiting = 0): Promise<EnqueueResult> {
    const session = sessionKeyOf(message);
    const k = this.keys;
    const position = await this.redis.sbEnqueue(
      k.seen(message.platform, message.eventId),
      k.inbox(session),
      k.pending,
      // A lone UTF-16 surrogate (valid in JSON.stringify's output, refused by Redis' cjson) becomes U+FFFD here.
      JSON.stringify(message, (_key, value: unknown) => (typeof value === 'string' ? value.toWellFormed() : value)),
      SEEN_TTL_SECONDS,
      session,
      maxWaiting,
    );
    if (position === -2) return { status: 'full', session };
    if (position < 0) return { status: 'duplicate', session };
    await addRunJob(this.queue, jobName(message), { v: 1, session, trigger: forDisplay(message) });
    return { status: 'queued', session, position };
  }
}
