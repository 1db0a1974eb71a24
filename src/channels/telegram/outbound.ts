import type { Api } from 'grammy';
import type { PieceLedger, WriteFailure } from '../kit/pieces.js';
import type { ApprovalCard, ApprovalOutcome, Attachment, InboundMessage, OutboundAdapter, OutgoingFile, PostKind, StreamShown } from '../types.js';
import { editApprovalDecided, postApprovalCard } from './approval-card.js';
import { downloadFile } from './download.js';
import { classifyTelegramError, describeTelegramError, telegramWriteFailure, withTelegramRetries } from './errors.js';
import { chatIdOf, PLATFORM, threadIdOf } from './ids.js';
import { finishStream, streamAnswer } from './stream.js';
import { upload, UPLOAD_MAX_BYTES } from './upload.js';
import { paceKey, TELEGRAM_TEXT_LIMIT, TelegramWriter, type TelegramOutboundOptions } from './writer.js';

export { STILL_WRITING } from './stream.js';
export { PHOTO_MAX_BYTES, UPLOAD_MAX_BYTES } from './upload.js';
export { GROUP_CHAT_GAP_MS, PIECE_LIMIT, PRIVATE_CHAT_GAP_MS, TELEGRAM_TEXT_LIMIT, type TelegramOutboundOptions } from './writer.js';

/** About one status edit per second per chat. */
export const EDIT_INTERVAL_MS = 1000;
/** A chat action shows for about 5 s; refreshed a little before it fades. */
export const TYPING_INTERVAL_MS = 4500;

/**
 * The outbound half over the Bot API (grammY's `Api`, plain HTTP): works in a worker that has
 * no poller and no webhook. Answers are rendered to Telegram HTML, split under the limit and
 * posted in order (replying to the request in groups, in its forum topic); a piece Telegram
 * refuses to parse is sent again as plain text. Every write to a chat waits for its turn on the
 * chat's pacer (writer.ts); the status message, best effort, is instead deferred (never dropped,
 * never blocking) while the chat's budget is not free. Streaming: stream.ts; files: upload.ts;
 * approval cards: approval-card.ts.
 */
export class TelegramOutbound implements OutboundAdapter {
  readonly platform = PLATFORM;
  readonly editIntervalMs = EDIT_INTERVAL_MS;
  readonly typingIntervalMs = TYPING_INTERVAL_MS;
  readonly uploadMaxBytes = UPLOAD_MAX_BYTES;
  private readonly w: TelegramWriter;

  constructor(api: Api, options: TelegramOutboundOptions) {
    this.w = new TelegramWriter(api, options);
  }

  post(to: InboundMessage, text: string, kind: PostKind, ledger?: PieceLedger): Promise<string[]> {
    if (kind === 'status') return this.w.send(to, clampStatus(text), { html: false, notify: false, reply: true, previews: 'status' }).then((id) => [id]);
    return this.w.postPieces(to, text, ledger);
  }

  classifyWriteError(err: unknown): WriteFailure {
    return telegramWriteFailure(err);
  }

  streamIntervalMs(to: InboundMessage): number {
    return this.w.pacer.gapMs(paceKey(chatIdOf(to)));
  }

  streamAnswer(to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
    return streamAnswer(this.w, to, text, shown);
  }

  finishStream(to: InboundMessage, shown: StreamShown, text: string, ledger?: PieceLedger): Promise<string[]> {
    return finishStream(this.w, to, shown, text, (t, id) => this.remove(t, id), ledger);
  }

  async edit(to: InboundMessage, messageId: string, text: string): Promise<void> {
    const chatId = chatIdOf(to);
    const body = clampStatus(text);
    const wait = this.w.pacer.waitMs(paceKey(chatId));
    if (wait > 0) return this.w.pacer.defer(paceKey(chatId), messageId, body, wait, (t) => this.editLater(chatId, messageId, t));
    await this.editNow(chatId, messageId, body);
  }

  async remove(to: InboundMessage, messageId: string): Promise<void> {
    const chatId = chatIdOf(to);
    this.w.pacer.cancel(paceKey(chatId), messageId);
    try {
      await withTelegramRetries(() => this.w.api.deleteMessage(chatId, Number(messageId)), { idempotent: true, maxWaitMs: 30_000 });
    } catch (err) {
      if (classifyTelegramError(err).kind !== 'gone') throw err;
    }
  }

  async typing(to: InboundMessage): Promise<void> {
    const chatId = chatIdOf(to);
    // One attempt, never repeated: a late "typing…" after the answer would outlive the run.
    if (this.w.pacer.floodWaitMs(paceKey(chatId)) > 0) return;
    const thread = threadIdOf(to);
    try {
      await this.w.api.sendChatAction(chatId, 'typing', thread !== undefined ? { message_thread_id: thread } : {});
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind !== 'rate_limited') throw err;
      this.w.pacer.flood(paceKey(chatId), failure.retryAfterMs);
    }
  }

  approvalCard(to: InboundMessage, card: ApprovalCard): Promise<string> {
    return postApprovalCard(this.w, to, card);
  }

  approvalDecided(to: InboundMessage, messageId: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void> {
    return editApprovalDecided(this.w, to, messageId, card, outcome);
  }

  download(attachment: Attachment, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
    return downloadFile(this.w.api, this.w.options.apiRoot, this.w.options.token, attachment.ref, maxBytes, signal);
  }

  upload(to: InboundMessage, file: OutgoingFile, signal: AbortSignal): Promise<string> {
    return upload(this.w, to, file, signal);
  }

  /** The caller saw the chat's budget free: the pacer counts this edit before it is sent. */
  private async editNow(chatId: number, messageId: string, text: string): Promise<void> {
    this.w.pacer.wrote(paceKey(chatId));
    try {
      await this.w.api.editMessageText(chatId, Number(messageId), text, this.w.previews('status'));
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind === 'not_modified' || failure.kind === 'gone') return;
      if (failure.kind !== 'rate_limited') throw err;
      this.w.noteWait(chatId, 'editMessageText', failure, failure.retryAfterMs);
      this.w.pacer.defer(paceKey(chatId), messageId, text, failure.retryAfterMs, (t) => this.editLater(chatId, messageId, t));
    }
  }

  /** A deferred edit, applied by a timer: its failure is logged (progress is best effort). */
  private editLater(chatId: number, messageId: string, text: string): void {
    const wait = this.w.pacer.waitMs(paceKey(chatId));
    if (wait > 0) return this.w.pacer.defer(paceKey(chatId), messageId, text, wait, (t) => this.editLater(chatId, messageId, t));
    this.editNow(chatId, messageId, text).catch((err: unknown) =>
      this.w.log.warn({ chat: chatId, error: describeTelegramError(err) }, 'deferred status edit failed'),
    );
  }
}

/** A status message is one message: only its newest lines are kept when it would pass the limit. */
function clampStatus(text: string): string {
  const trimmed = text.trim() || '…';
  if (trimmed.length <= TELEGRAM_TEXT_LIMIT) return trimmed;
  return `…${trimmed.slice(trimmed.length - (TELEGRAM_TEXT_LIMIT - 1))}`;
}
