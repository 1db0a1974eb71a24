import { ConversationPacer } from '../kit/pacer.js';
import { slackCall, type CallOptions } from './api.js';
import { SlackRateLimited } from './errors.js';

/**
 * Least time between two writes in one conversation (posts, updates, deletes, stream calls):
 * chat.postMessage allows about one message a second per channel, chat.update is Tier 3.
 */
export const STREAM_INTERVAL_MS = 1_000;
/** The longest a write waits for its turn (a 429's hold included) before trying anyway: slackCall's own cap on a Retry-After. */
export const MAX_WRITE_WAIT_MS = 30_000;

/**
 * Every Slack message write goes through `write`: it waits for the conversation's turn on the one
 * per-conversation pacer (../kit/pacer.ts), and a 429 holds the conversation for its Retry-After,
 * for every later write of it (the stream's and the final answer's alike).
 */
export class SlackWriter {
  private readonly pacer: ConversationPacer;

  constructor(now: () => number = Date.now) {
    this.pacer = new ConversationPacer(STREAM_INTERVAL_MS, now);
  }

  async write<T>(channel: string, method: string, call: () => Promise<T>, options: CallOptions): Promise<T> {
    await this.pacer.turn(channel, MAX_WRITE_WAIT_MS, options.signal);
    try {
      return await slackCall(method, call, {
        ...options,
        onWait: (failure, ms) => {
          if (failure.kind === 'rate_limited') this.pacer.flood(channel, ms);
        },
      });
    } catch (err) {
      if (err instanceof SlackRateLimited) this.pacer.flood(channel, err.retryAfterMs);
      throw err;
    }
  }

  /** How long a 429 still holds the conversation. */
  floodWaitMs(channel: string): number {
    return this.pacer.floodWaitMs(channel);
  }

  /** How long until the conversation may be written (its gap, writes queued for their turn, a 429's hold). */
  waitMs(channel: string): number {
    return this.pacer.waitMs(channel);
  }
}
