import type { Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import { memoryLedger, type PieceLedger, type WriteFailure } from '../kit/pieces.js';
import type {
  ApprovalCard,
  ApprovalOutcome,
  Attachment,
  DeliveredOutcome,
  InboundMessage,
  OutboundAdapter,
  OutgoingFile,
  PostKind,
  StreamShown,
} from '../types.js';
import { postCard, settleCard } from './approval-card.js';
import { downloadAttachment } from './download.js';
import { discordWriteFailure, safeError } from './errors.js';
import { fitStatus } from './format.js';
import { interactionKey, interactionOf, ORIGINAL, UPLOAD_MAX_BYTES, type InteractionRef } from './ids.js';
import type { DiscordRest } from './rest.js';
import { postReply } from './reply.js';
import { DiscordStream } from './stream.js';
import { isStreamedId, parseStreamed } from './stream-layout.js';
import { uploadFile } from './upload.js';
import { DiscordWriter, NO_PINGS } from './writer.js';

export { SUPPRESS_EMBEDS } from './writer.js';

export const FOLDED_NOTE = '↪ Answered together with the messages that came after this one (see below).';

/** What an earlier slash command of a folded turn shows once the turn has ended: a pointer, or how the turn ended. */
export function foldedNote(outcome: Pick<DeliveredOutcome, 'state' | 'line'>): string {
  if (outcome.state === 'completed') return FOLDED_NOTE;
  return `↪ Handled together with the messages that came after this one.${outcome.line ? ` ${outcome.line}` : ''}`;
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
  /** LINK_PREVIEWS: answers may show link embeds (default: no message does; see ../kit/link-previews.ts). */
  linkPreviews?: boolean;
}

/**
 * Discord's outbound half, plain REST (works in a worker). A slash command is answered through
 * its interaction webhook: progress edits the deferred response, the answer replaces it (the rest
 * as follow-ups, in order), a failure is an ephemeral line. When the interaction token has expired
 * (15 minutes) or the webhook refuses it (401/404), the same text goes to the channel as normal
 * messages. A mention or DM is answered with replies to the user's message. A streamed answer
 * (STREAM_ANSWERS) is shown in those same messages while the model writes it, and finished in
 * place. Every write goes through the writer, on the channel's pacer.
 */
export class DiscordOutbound implements OutboundAdapter {
  readonly platform = 'discord';
  readonly editIntervalMs = 1_200;
  readonly typingIntervalMs = 8_000;
  readonly uploadMaxBytes = UPLOAD_MAX_BYTES;
  private readonly w: DiscordWriter;
  private readonly stream: DiscordStream;
  private readonly hosts: readonly string[];
  private readonly redis: Redis | undefined;
  private readonly prefix: string;

  constructor(options: DiscordOutboundOptions) {
    this.hosts = options.downloadHosts;
    this.redis = options.redis;
    this.prefix = options.prefix ?? '';
    this.w = new DiscordWriter(options.rest, options.log, options.now ?? Date.now, options.linkPreviews ?? false);
    this.stream = new DiscordStream(this.w);
  }

  post(to: InboundMessage, text: string, kind: PostKind, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    return postReply(this.w, to, text, kind, ledger);
  }

  classifyWriteError(err: unknown): WriteFailure {
    return discordWriteFailure(err);
  }

  /**
   * Discord has no "message is not modified" error: an edit with the same content succeeds (and
   * counts as an edit), so there is nothing to tolerate; the stream skips unchanged edits itself.
   */
  async edit(to: InboundMessage, messageId: string, text: string): Promise<void> {
    const content = fitStatus(text);
    const key = to.conversation;
    if (isStreamedId(messageId)) return this.stream.edit(to, parseStreamed(messageId), content, false, 'status');
    if (messageId === ORIGINAL) {
      const ref = interactionOf(to);
      // A deferred response that shows a streamed answer keeps it: progress is not written over the model's words.
      if (ref && this.w.usable(ref) && !this.w.heldOriginal.has(ref.id)) await this.w.hook(ref, () => this.w.editOriginal(key, ref, content, 'status'));
      return;
    }
    await this.w.write(key, 'PATCH', `/channels/${key}/messages/${messageId}`, { body: { content, allowed_mentions: NO_PINGS, ...this.w.edited('status') } });
  }

  /**
   * A status message that was the deferred response has become the answer (or was deleted with a
   * failure): nothing to remove. A streamed answer's message is deleted where it is.
   */
  async remove(to: InboundMessage, messageId: string): Promise<void> {
    if (messageId === ORIGINAL) return;
    if (isStreamedId(messageId)) return this.stream.remove(to, parseStreamed(messageId));
    await this.w.deleteChannelMessage(to, messageId);
  }

  streamIntervalMs(to: InboundMessage): number {
    return this.stream.intervalMs(to);
  }

  /** The answer so far, in the messages `post` would put the final answer in (see stream.ts). */
  streamAnswer(to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
    return this.stream.show(to, text, shown);
  }

  /** The final answer in the streamed messages; with none yet, it is posted as `post` does (on the channel's turn, a 429's hold waited out). */
  finishStream(to: InboundMessage, shown: StreamShown, text: string, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    if (shown.ids.length === 0) return this.post(to, text, 'answer', ledger);
    return this.stream.finish(to, shown, text, ledger);
  }

  /** A slash command shows "is thinking…" on its deferred response; typing is for mentions and DMs. */
  async typing(to: InboundMessage): Promise<void> {
    if (interactionOf(to)) return;
    await this.w.call('POST', `/channels/${to.conversation}/typing`, { idempotent: true });
  }

  approvalCard(to: InboundMessage, card: ApprovalCard): Promise<string> {
    return postCard(this.w, to, card);
  }

  approvalDecided(to: InboundMessage, messageId: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void> {
    return settleCard(this.w, to, messageId, card, outcome);
  }

  upload(to: InboundMessage, file: OutgoingFile, signal: AbortSignal): Promise<string> {
    return uploadFile(this.w, to, file, signal);
  }

  download(attachment: Attachment, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
    return downloadAttachment(attachment, maxBytes, signal, this.hosts);
  }

  /**
   * Slash commands folded into this turn before its last message still show "is thinking…":
   * their deferred responses now point at the answer below (or say how the turn ended). Then the
   * turn's interactions are forgotten: the reply is final, and a token is not kept past its use
   * (a redelivered reply finds them gone and only skips these edits, which were made already).
   */
  async ended(to: InboundMessage, outcome: DeliveredOutcome): Promise<void> {
    this.w.forget(to.eventId);
    if (!this.redis) return;
    for (const id of outcome.messageIds) {
      if (id === to.id) continue;
      const raw = await this.redis.get(interactionKey(this.prefix, id));
      if (!raw) continue;
      const ref = JSON.parse(raw) as InteractionRef;
      if (!this.w.usable(ref)) continue;
      await this.w
        .hook(ref, () => this.w.editOriginal(to.conversation, ref, foldedNote(outcome), 'answer'))
        .catch((err: unknown) => this.w.log.warn({ err: safeError(err), eventId: ref.id }, 'could not point a folded slash command at its answer'));
    }
    if (outcome.messageIds.length > 0) await this.redis.del(...outcome.messageIds.map((id) => interactionKey(this.prefix, id)));
  }
}
