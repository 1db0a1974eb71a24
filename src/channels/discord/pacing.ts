import { ConversationPacer } from '../kit/pacer.js';

/**
 * Least time between two writes in one channel (posts, edits and deletes: status, stream, final
 * pieces, cards, files). Discord publishes no numbers (Topics → Rate Limits: "should not be hard
 * coded", read the X-RateLimit headers); observed per-channel message limits are about 5 writes
 * per 5 s, so one write every 1.2 s stays under them with room for a retry.
 */
export const STREAM_INTERVAL_MS = 1_200;
/** The longest a write waits for its turn (a 429's hold included) before trying anyway: the REST client's own cap on a retry-after. */
export const MAX_WRITE_WAIT_MS = 60_000;

/** A global 429 holds every channel of the bot. */
const EVERYWHERE = '*';

/**
 * Discord's use of the one per-conversation pacer (../kit/pacer.ts): keyed by channel, plus the
 * global 429 that holds every channel at once. In memory: it spaces the writes of the worker that makes them.
 */
export class DiscordPacing {
  private readonly pacer: ConversationPacer;

  constructor(now: () => number) {
    this.pacer = new ConversationPacer(STREAM_INTERVAL_MS, now);
  }

  /** How long until the channel may be written (the gap since its last write, writes queued for their turn, a 429's hold). */
  waitMs(channel: string): number {
    return Math.max(this.pacer.waitMs(channel), this.pacer.floodWaitMs(EVERYWHERE));
  }

  /** Resolves when this write may go, counted as made: after the writes queued before it, the gap and any 429 hold (at most `maxWaitMs`). */
  turn(channel: string, maxWaitMs = MAX_WRITE_WAIT_MS, signal?: AbortSignal): Promise<void> {
    const global = this.pacer.floodWaitMs(EVERYWHERE);
    if (global > 0) this.pacer.flood(channel, global);
    return this.pacer.turn(channel, maxWaitMs, signal);
  }

  limited(channel: string, retryAfterMs: number, global: boolean): void {
    this.pacer.flood(global ? EVERYWHERE : channel, retryAfterMs);
  }
}
