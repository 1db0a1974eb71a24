import type { WebClient } from '@slack/web-api';
import type { Logger } from '../../log.js';
import type { DeliveredOutcome, InboundMessage } from '../types.js';
import { slackCall } from './api.js';
import { SlackRefused } from './errors.js';
import { parseMessageKey } from './ids.js';

/** Messages acknowledged and not yet ended, kept at most (a long-lived worker must not grow). */
const MAX_ACKNOWLEDGED = 1_000;

/** Reactions on the user's message: received and working, then how the run ended. */
export const REACTIONS = { working: 'eyes', completed: 'white_check_mark', failed: 'warning' } as const;

/**
 * Slack has no typing indicator for bots: the user's message gets an "eyes" reaction while the
 * run works, a check or a warning once it ended. Reactions are no messages: not paced.
 */
export class SlackReactions {
  /** Reaction changes of one message, in order (the add of "eyes" may still be in flight when the run ends). */
  private readonly reactionChains = new Map<string, Promise<void>>();
  private readonly acknowledged = new Set<string>();

  constructor(
    private readonly client: WebClient,
    private readonly log: Logger,
  ) {}

  /** The acknowledgement reaction on the user's message, added once. */
  async typing(to: InboundMessage): Promise<void> {
    if (to.replyTo === undefined) return;
    const key = `${to.conversation}:${to.replyTo}`;
    if (this.acknowledged.has(key)) return;
    this.acknowledged.add(key);
    // A turn another worker finished (this one died or stopped mid-run) is never ended here: the oldest go first.
    if (this.acknowledged.size > MAX_ACKNOWLEDGED) this.acknowledged.delete(this.acknowledged.values().next().value!);
    await this.react(to.conversation, to.replyTo, 'add', REACTIONS.working);
  }

  /** Turns "eyes" into a check or a warning on the answered message(s). Never throws: the reply is already out. */
  async ended(to: InboundMessage, outcome: DeliveredOutcome): Promise<void> {
    const final = outcome.state === 'completed' ? REACTIONS.completed : REACTIONS.failed;
    const others = new Set<string>();
    for (const id of outcome.messageIds) {
      const ref = parseMessageKey(id);
      if (ref && ref.channel === to.conversation && ref.ts !== to.replyTo) others.add(ref.ts);
    }
    const swap = async (ts: string, hadWorking: boolean): Promise<void> => {
      try {
        // Another worker may have added "eyes" (a reply re-delivered after a crash): remove it whenever it may be there.
        if (hadWorking) await this.react(to.conversation, ts, 'remove', REACTIONS.working);
        await this.react(to.conversation, ts, 'add', final);
      } catch (err) {
        this.log.warn({ err, channel: to.conversation, ts }, 'could not set the end reaction');
      }
    };
    const jobs = [...others].map((ts) => swap(ts, false));
    if (to.replyTo !== undefined) {
      this.acknowledged.delete(`${to.conversation}:${to.replyTo}`);
      jobs.push(swap(to.replyTo, true));
    }
    await Promise.all(jobs);
  }

  /** Adds or removes a reaction after the message's earlier reaction changes; "already done" counts as done. */
  private react(channel: string, ts: string, op: 'add' | 'remove', name: string): Promise<void> {
    const key = `${channel}:${ts}`;
    const previous = this.reactionChains.get(key) ?? Promise.resolve();
    const next = previous.then(async () => {
      try {
        const args = { channel, timestamp: ts, name };
        await slackCall(`reactions.${op}`, () => (op === 'add' ? this.client.reactions.add(args) : this.client.reactions.remove(args)), { idempotent: true });
      } catch (err) {
        if (err instanceof SlackRefused && (err.code === 'already_reacted' || err.code === 'no_reaction')) return;
        throw err;
      }
    });
    const settled = next.catch(() => undefined);
    this.reactionChains.set(key, settled);
    void settled.then(() => {
      if (this.reactionChains.get(key) === settled) this.reactionChains.delete(key);
    });
    return next;
  }
}
