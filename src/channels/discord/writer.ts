import type { Logger } from '../../log.js';
import type { InboundMessage, PostKind } from '../types.js';
import { previewsAllowed, type PreviewKind } from '../kit/link-previews.js';
import { DiscordApiError, FollowUpGone, interactionGone, unknownMessage } from './errors.js';
import { interactionOf, tokenAlive, type InteractionRef } from './ids.js';
import { DiscordPacing, MAX_WRITE_WAIT_MS } from './pacing.js';
import type { DiscordRest, RequestOptions } from './rest.js';

/** Message flag: Discord makes no embeds of the links in the message (it fetches every link it embeds). */
export const SUPPRESS_EMBEDS = 1 << 2;
/** No @everyone, @here, role or user pings from anything the model writes. */
export const NO_PINGS = { parse: [] as string[] };

export type WriteOptions = Pick<RequestOptions, 'retry' | 'timeoutMs'>;

export interface Posted {
  id: string;
}

/**
 * What every Discord write shares, so the post, stream, upload and card halves agree on it: which
 * interactions still take messages, which deferred responses hold a streamed answer, the
 * channel's pacer, and the flags and mentions each message create or edit carries. Every post,
 * edit and delete goes through `write` and waits for its channel's turn (an architecture test
 * keeps the other files off the REST client's writes).
 */
export class DiscordWriter {
  /** Interactions whose webhook refused a call: not tried again (their messages go to the channel). */
  private readonly gone = new Set<string>();
  /**
   * Interactions whose deferred response shows a streamed answer (a step's text stays there when
   * the step goes on to tools): progress is not written over it, and later text goes to follow-ups.
   */
  readonly heldOriginal = new Set<string>();
  readonly pacing: DiscordPacing;

  constructor(
    private readonly rest: DiscordRest,
    readonly log: Logger,
    readonly now: () => number,
    private readonly linkPreviews: boolean,
  ) {
    this.pacing = new DiscordPacing(now);
  }

  /** A post, edit or delete in `channel`, made when the channel's pacer gives it its turn. */
  async write<T = unknown>(channel: string, method: 'POST' | 'PATCH' | 'DELETE', path: string, options: RequestOptions = {}): Promise<T> {
    await this.pacing.turn(channel, MAX_WRITE_WAIT_MS, options.signal);
    return this.rest.request<T>(method, path, options);
  }

  /** A call that writes no message (a read, the typing indicator): not paced. */
  call<T = unknown>(method: 'GET' | 'POST', path: string, options: RequestOptions = {}): Promise<T> {
    return this.rest.request<T>(method, path, options);
  }

  usable(ref: InteractionRef): boolean {
    if (this.gone.size > 1_000) this.gone.clear();
    return !this.gone.has(ref.id) && tokenAlive(ref, this.now());
  }

  /** The turn has ended: its interaction is not needed any more. */
  forget(eventId: string): void {
    this.gone.delete(eventId);
    this.heldOriginal.delete(eventId);
  }

  /** A webhook call; null when the interaction no longer takes messages (then it is not tried again). */
  async hook<T>(ref: InteractionRef, call: () => Promise<T>): Promise<T | null> {
    try {
      return await call();
    } catch (err) {
      if (!interactionGone(err)) throw err;
      this.gone.add(ref.id);
      this.log.info({ eventId: ref.id, status: (err as DiscordApiError).status }, 'interaction token no longer valid; answering in the channel');
      return null;
    }
  }

  /**
   * The flags of a message made with content (see ../link-previews.ts): SUPPRESS_EMBEDS unless it
   * may embed, with the message's other flags (`others`, e.g. EPHEMERAL). Every message create
   * (channel messages, follow-ups, files) takes them from here.
   */
  created(kind: PreviewKind, others = 0): { flags?: number } {
    const flags = others | this.embedFlag(kind);
    return flags ? { flags } : {};
  }

  /**
   * The flags of an edit with content: SUPPRESS_EMBEDS set, or unset where an answer may embed
   * (an answer written over a status line in the deferred response would keep its flag). Edits
   * can change only this flag, so no other is lost. Every edit with content takes it from here.
   */
  edited(kind: PreviewKind): { flags: number } {
    return { flags: this.embedFlag(kind) };
  }

  private embedFlag(kind: PreviewKind): number {
    return previewsAllowed(this.linkPreviews, kind) ? 0 : SUPPRESS_EMBEDS;
  }

  editOriginal(channel: string, ref: InteractionRef, content: string, kind: PreviewKind, write: WriteOptions = {}): Promise<Posted> {
    return this.write<Posted>(channel, 'PATCH', `/webhooks/${ref.applicationId}/${ref.token}/messages/@original`, {
      auth: false,
      body: { content, allowed_mentions: NO_PINGS, ...this.edited(kind) },
      ...write,
    });
  }

  followUp(channel: string, ref: InteractionRef, content: string, kind: PreviewKind, flags = 0, write: WriteOptions = {}): Promise<Posted> {
    // Not idempotent: a follow-up whose response was lost is not sent again (only a 429 is retried).
    return this.write<Posted>(channel, 'POST', `/webhooks/${ref.applicationId}/${ref.token}`, {
      auth: false,
      body: { content, allowed_mentions: NO_PINGS, ...this.created(kind, flags) },
      ...write,
    });
  }

  /** An edit or deletion of one of the interaction's follow-ups; a deleted follow-up is FollowUpGone, not the interaction gone. */
  async followUpCall(channel: string, ref: InteractionRef, method: 'PATCH' | 'DELETE', id: string, options: RequestOptions): Promise<true> {
    try {
      await this.write(channel, method, `/webhooks/${ref.applicationId}/${ref.token}/messages/${id}`, { auth: false, ...options });
      return true;
    } catch (err) {
      throw unknownMessage(err) ? new FollowUpGone(err) : err;
    }
  }

  /** A message someone already deleted stays deleted. */
  async deleteChannelMessage(to: InboundMessage, id: string, write: WriteOptions = {}): Promise<void> {
    try {
      await this.write(to.conversation, 'DELETE', `/channels/${to.conversation}/messages/${id}`, write);
    } catch (err) {
      if (!(err instanceof DiscordApiError && err.status === 404)) throw err;
    }
  }
}

/** An expired slash command's answer is a plain channel message: it names the user who asked. */
export function mentionOf(to: InboundMessage): string {
  const ref = interactionOf(to);
  return ref ? `<@${ref.userId}>\n` : '';
}

/**
 * Where a reply's first channel message goes and whom it notifies: it names the slash command's
 * user (`names`: the command's interaction is gone), or replies to the user's message (a status
 * message notifies no one).
 */
export function firstPlacement(to: InboundMessage, kind: PostKind, names: boolean): Record<string, unknown> {
  if (names) return { allowed_mentions: { parse: [], users: [interactionOf(to)!.userId] } };
  if (!to.replyTo) return {};
  return {
    message_reference: { message_id: to.replyTo, channel_id: to.conversation, fail_if_not_exists: false },
    allowed_mentions: { parse: [], replied_user: kind !== 'status' },
  };
}

/**
 * A reply to the user's message that notifies no one (a card, a file: the answer is what
 * notifies), for a mention or DM; a slash command has no message to reply to.
 */
export function quietReply(to: InboundMessage): Record<string, unknown> {
  if (!to.replyTo || interactionOf(to)) return {};
  return {
    message_reference: { message_id: to.replyTo, channel_id: to.conversation, fail_if_not_exists: false },
    allowed_mentions: { parse: [], replied_user: false },
  };
}
