import type { Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import type { FailureReason } from '../../agent/types.js';
import { splitMessage } from '../../delivery/chunk.js';
import { honestLine } from '../../delivery/honest-line.js';
import type { Attachment, DeliveredOutcome, InboundMessage, OutboundAdapter, PostKind } from '../types.js';
import { downloadAttachment } from './download.js';
import { DiscordApiError, interactionGone, safeError } from './errors.js';
import { fitStatus, toDiscordMarkdown } from './format.js';
import { interactionKey, interactionOf, MESSAGE_LIMIT, ORIGINAL, pieceNonce, tokenAlive, type InteractionRef } from './ids.js';
import type { DiscordRest } from './rest.js';

const EPHEMERAL = 1 << 6;
/** No @everyone, @here, role or user pings from anything the model writes. */
const NO_PINGS = { parse: [] as string[] };

export const FOLDED_NOTE = '↪ Answered together with the messages that came after this one (see below).';

/** What an earlier slash command of a folded turn shows once the turn has ended. */
export function foldedNote(outcome: Pick<DeliveredOutcome, 'state' | 'reason'>): string {
  if (outcome.state === 'completed') return FOLDED_NOTE;
  return `↪ Handled together with the messages that came after this one. ${honestLine(outcome.reason as FailureReason | undefined)}`;
}

interface Posted {
  id: string;
}

export interface DiscordOutboundOptions {
  rest: DiscordRest;
  log: Logger;
  /** Hosts attachments may be downloaded from. */
  downloadHosts: readonly string[];
  /** Where the gateway keeps slash commands' interactions (for a folded turn's earlier commands). */
  redis?: Redis;
  prefix?: string;
  now?: () => number;
}

/**
 * Discord's outbound half, plain REST (works in a worker). A slash command is answered through
 * its interaction webhook: progress edits the deferred response, the answer replaces it (the rest
 * as follow-ups, in order), a failure is an ephemeral line. When the interaction token has expired
 * (15 minutes) or the webhook refuses it (401/404), the same text goes to the channel as normal
 * messages. A mention or DM is answered with replies to the user's message.
 */
export class DiscordOutbound implements OutboundAdapter {
  readonly platform = 'discord';
  readonly editIntervalMs = 1_200;
  readonly typingIntervalMs = 8_000;
  private readonly rest: DiscordRest;
  private readonly log: Logger;
  private readonly hosts: readonly string[];
  private readonly redis: Redis | undefined;
  private readonly prefix: string;
  private readonly now: () => number;
  /** Interactions whose webhook refused a call: not tried again (their messages go to the channel). */
  private readonly gone = new Set<string>();

  constructor(options: DiscordOutboundOptions) {
    this.rest = options.rest;
    this.log = options.log;
    this.hosts = options.downloadHosts;
    this.redis = options.redis;
    this.prefix = options.prefix ?? '';
    this.now = options.now ?? Date.now;
  }

  async post(to: InboundMessage, text: string, kind: PostKind): Promise<string[]> {
    const ref = interactionOf(to);
    if (ref && this.usable(ref)) {
      const posted = await this.postToInteraction(ref, to, text, kind);
      if (posted) return posted;
    }
    return this.postToChannel(to, text, kind, ref);
  }

  async edit(to: InboundMessage, messageId: string, text: string): Promise<void> {
    const content = fitStatus(text);
    if (messageId === ORIGINAL) {
      const ref = interactionOf(to);
      if (ref && this.usable(ref)) await this.hook(ref, () => this.editOriginal(ref, content));
      return;
    }
    await this.rest.request('PATCH', `/channels/${to.conversation}/messages/${messageId}`, { body: { content, allowed_mentions: NO_PINGS } });
  }

  /** A status message that was the deferred response has become the answer (or was deleted with a failure): nothing to remove. */
  async remove(to: InboundMessage, messageId: string): Promise<void> {
    if (messageId === ORIGINAL) return;
    try {
      await this.rest.request('DELETE', `/channels/${to.conversation}/messages/${messageId}`);
    } catch (err) {
      if (!(err instanceof DiscordApiError && err.status === 404)) throw err;
    }
  }

  /** A slash command shows "is thinking…" on its deferred response; typing is for mentions and DMs. */
  async typing(to: InboundMessage): Promise<void> {
    if (interactionOf(to)) return;
    await this.rest.request('POST', `/channels/${to.conversation}/typing`, { idempotent: true });
  }

  download(attachment: Attachment, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
    return downloadAttachment(attachment, maxBytes, signal, this.hosts);
  }

  /**
   * Slash commands folded into this turn before its last message still show "is thinking…":
   * their deferred responses now point at the answer below (or say how the turn ended).
   */
  async ended(to: InboundMessage, outcome: DeliveredOutcome): Promise<void> {
    this.gone.delete(to.eventId);
    if (!this.redis) return;
    for (const id of outcome.messageIds) {
      if (id === to.id) continue;
      const raw = await this.redis.get(interactionKey(this.prefix, id));
      if (!raw) continue;
      const ref = JSON.parse(raw) as InteractionRef;
      if (!this.usable(ref)) continue;
      await this.hook(ref, () => this.editOriginal(ref, foldedNote(outcome))).catch((err: unknown) => this.log.warn({ err: safeError(err), eventId: ref.id }, 'could not point a folded slash command at its answer'));
    }
  }

  private usable(ref: InteractionRef): boolean {
    if (this.gone.size > 1_000) this.gone.clear();
    return !this.gone.has(ref.id) && tokenAlive(ref, this.now());
  }

  /** A webhook call; null when the interaction no longer takes messages (then it is not tried again). */
  private async hook<T>(ref: InteractionRef, call: () => Promise<T>): Promise<T | null> {
    try {
      return await call();
    } catch (err) {
      if (!interactionGone(err)) throw err;
      this.gone.add(ref.id);
      this.log.info({ eventId: ref.id, status: (err as DiscordApiError).status }, 'interaction token no longer valid; answering in the channel');
      return null;
    }
  }

  private editOriginal(ref: InteractionRef, content: string): Promise<Posted> {
    return this.rest.request<Posted>('PATCH', `/webhooks/${ref.applicationId}/${ref.token}/messages/@original`, { auth: false, body: { content, allowed_mentions: NO_PINGS } });
  }

  private followUp(ref: InteractionRef, content: string, flags = 0): Promise<Posted> {
    // Not idempotent: a follow-up whose response was lost is not sent again (only a 429 is retried).
    return this.rest.request<Posted>('POST', `/webhooks/${ref.applicationId}/${ref.token}`, { auth: false, body: { content, allowed_mentions: NO_PINGS, ...(flags && { flags }) } });
  }

  /** Null when the interaction refused the first write: the caller posts everything in the channel. */
  private async postToInteraction(ref: InteractionRef, to: InboundMessage, text: string, kind: PostKind): Promise<string[] | null> {
    if (kind === 'status') return (await this.hook(ref, () => this.editOriginal(ref, fitStatus(text)))) ? [ORIGINAL] : null;
    if (kind === 'notice') {
      // Only the user who ran the command sees a failure line; the deferred response goes away.
      const ids: string[] = [];
      for (const piece of splitMessage(text, MESSAGE_LIMIT)) {
        const posted = await this.hook(ref, () => this.followUp(ref, piece, EPHEMERAL));
        if (!posted) return ids.length ? ids : null;
        ids.push(posted.id);
      }
      await this.hook(ref, () => this.rest.request('DELETE', `/webhooks/${ref.applicationId}/${ref.token}/messages/@original`, { auth: false })).catch((err: unknown) =>
        this.log.warn({ err: safeError(err), eventId: ref.id }, 'could not delete the deferred response'),
      );
      return ids;
    }
    const pieces = splitMessage(toDiscordMarkdown(text), MESSAGE_LIMIT);
    const ids: string[] = [];
    for (const [i, piece] of pieces.entries()) {
      const posted = await this.hook(ref, () => (i === 0 ? this.editOriginal(ref, piece) : this.followUp(ref, piece)));
      if (!posted) {
        if (i === 0) return null;
        return [...ids, ...(await this.channelPieces(to, pieces.slice(i), kind, i))];
      }
      ids.push(i === 0 ? ORIGINAL : posted.id);
    }
    return ids;
  }

  private async postToChannel(to: InboundMessage, text: string, kind: PostKind, ref: InteractionRef | undefined): Promise<string[]> {
    if (kind === 'status') return this.channelPieces(to, [fitStatus(text)], kind, 0);
    // An expired slash command's answer is a plain channel message: it names the user who asked.
    const mention = ref ? `<@${ref.userId}>\n` : '';
    return this.channelPieces(to, splitMessage(toDiscordMarkdown(text), MESSAGE_LIMIT - mention.length), kind, 0, ref && mention);
  }

  /** Posts pieces in order; the first replies to the user's message (or names the slash command's user). */
  private async channelPieces(to: InboundMessage, pieces: string[], kind: PostKind, offset: number, mention = ''): Promise<string[]> {
    const ids: string[] = [];
    for (const [i, piece] of pieces.entries()) {
      const first = i === 0 && offset === 0;
      const body: Record<string, unknown> = { content: piece, allowed_mentions: NO_PINGS, nonce: pieceNonce(to, kind, offset + i), enforce_nonce: true };
      if (first && mention) {
        body.content = `${mention}${piece}`;
        body.allowed_mentions = { parse: [], users: [interactionOf(to)!.userId] };
      } else if (first && to.replyTo) {
        body.message_reference = { message_id: to.replyTo, channel_id: to.conversation, fail_if_not_exists: false };
        body.allowed_mentions = { parse: [], replied_user: kind !== 'status' };
      }
      // With enforce_nonce a resent POST returns the message already made, so it is safe to retry.
      const posted = await this.rest.request<Posted>('POST', `/channels/${to.conversation}/messages`, { body, idempotent: true });
      ids.push(posted.id);
    }
    return ids;
  }
}
