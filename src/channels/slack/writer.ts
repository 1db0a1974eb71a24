import type { WebClient } from '@slack/web-api';
import type { Logger } from '../../log.js';
import { previewsAllowed, type PreviewKind } from '../kit/link-previews.js';
import { ConversationPacer } from '../kit/pacer.js';
import type { InboundMessage } from '../types.js';
import { slackCall, type CallOptions } from './api.js';
import { SlackRateLimited, SlackRefused } from './errors.js';

/**
 * Least time between two writes in one conversation (posts, updates, deletes, stream calls):
 * chat.postMessage allows about one message a second per channel, chat.update is Tier 3.
 */
export const STREAM_INTERVAL_MS = 1_000;
/** The longest a write waits for its turn (a 429's hold included) before trying anyway: slackCall's own cap on a Retry-After. */
export const MAX_WRITE_WAIT_MS = 30_000;

/** Slack message metadata (event metadata: a type and a flat payload), as chat.postMessage takes it. */
export interface SlackMetadata {
  event_type: string;
  event_payload: Record<string, string | number | boolean>;
}

/**
 * What every Slack message write shares, so the answer, stream, card and upload halves agree on
 * it. Every write goes through `write`: it waits for the conversation's turn on the one
 * per-conversation pacer (../kit/pacer.ts), and a 429 holds the conversation for its Retry-After,
 * for every later write of it (the stream's and the final answer's alike).
 */
export class SlackWriter {
  private readonly pacer: ConversationPacer;

  constructor(
    readonly client: WebClient,
    readonly log: Logger,
    private readonly linkPreviews: boolean,
    now: () => number = Date.now,
  ) {
    this.pacer = new ConversationPacer(STREAM_INTERVAL_MS, now);
  }

  /**
   * Every chat.postMessage takes its unfurl setting from here (see ../kit/link-previews.ts). Slack
   * decides unfurls when a message is posted: chat.update, chat.postEphemeral and the streaming
   * methods (chat.startStream / appendStream / stopStream) take no unfurl arguments.
   */
  unfurls(kind: PreviewKind): { unfurl_links?: false; unfurl_media?: false } {
    return previewsAllowed(this.linkPreviews, kind) ? {} : { unfurl_links: false, unfurl_media: false };
  }

  /**
   * chat.postMessage where `to` came from (its thread); never repeated unless Slack proved it was
   * not done (a 429). `metadata`: Slack message metadata (a reply's piece names itself with it, so
   * a later run can look it up: find-piece.ts). Returns its ts.
   */
  async postMessage(
    to: InboundMessage,
    text: string,
    kind: PreviewKind,
    extra: { blocks?: unknown[]; metadata?: SlackMetadata } = {},
    call: Partial<CallOptions> = {},
  ): Promise<string> {
    const res = await this.write(
      to.conversation,
      'chat.postMessage',
      () =>
        this.client.chat.postMessage({
          channel: to.conversation,
          text,
          ...(extra.blocks && { blocks: extra.blocks as never }),
          ...(extra.metadata && { metadata: extra.metadata }),
          ...(to.thread !== undefined && { thread_ts: to.thread }),
          ...this.unfurls(kind),
        }),
      { ...call, idempotent: false },
    );
    if (!res.ts) throw new SlackRefused('chat.postMessage', 'no_ts_in_response');
    return res.ts;
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
