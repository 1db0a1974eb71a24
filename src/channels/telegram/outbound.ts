import type { Api } from 'grammy';
import type { Logger } from '../../log.js';
import { splitMessage } from '../../delivery/chunk.js';
import type { ApprovalCard, ApprovalOutcome, Attachment, InboundMessage, OutboundAdapter, PostKind } from '../types.js';
import { cardFooter, cardSubject, decisionLine } from '../../delivery/approval-card.js';
import { approvalData } from './approval-data.js';
import { memoryLedger, sendPieces, type PieceLedger, type WriteFailure } from '../../delivery/pieces.js';
import { classifyTelegramError, describeTelegramError, sleep, telegramWriteFailure, withTelegramRetries, type TelegramFailure } from './errors.js';
import { downloadFile } from './download.js';
import { escapeHtml, toTelegramHtml, visibleLength } from './format.js';
import { chatIdOf, isGroup, PLATFORM, threadIdOf } from './ids.js';
import { ChatPacer } from './pacing.js';

/** Telegram's limit: 4,096 UTF-16 units of text after entity parsing. */
export const TELEGRAM_TEXT_LIMIT = 4096;
/** Pieces are cut from the Markdown a little under the limit; rendering never lengthens the visible text. */
export const PIECE_LIMIT = 4000;
/** About one status edit per second per chat. */
export const EDIT_INTERVAL_MS = 1000;
/** A chat action shows for about 5 s; refreshed a little before it fades. */
export const TYPING_INTERVAL_MS = 4500;
/** Longest a post waits for a chat's flood wait before trying anyway (the retry helper has the same cap per 429). */
const MAX_FLOOD_WAIT_MS = 300_000;

export interface TelegramOutboundOptions {
  token: string;
  /** The Bot API root files are downloaded from. */
  apiRoot: string;
  log: Logger;
  /** Test seam: the clock the pacer reads. */
  now?: () => number;
}

/**
 * The outbound half over the Bot API (grammY's `Api`, plain HTTP): works in a worker that has
 * no poller and no webhook. Answers are rendered to Telegram HTML, split under the limit and
 * posted in order (replying to the request in groups, in its forum topic); a piece Telegram
 * refuses to parse is sent again as plain text. The status message is plain text, edited no
 * more than once a second per chat and deferred (never dropped, never blocking) during a 429.
 */
export class TelegramOutbound implements OutboundAdapter {
  readonly platform = PLATFORM;
  readonly editIntervalMs = EDIT_INTERVAL_MS;
  readonly typingIntervalMs = TYPING_INTERVAL_MS;
  private readonly pacer: ChatPacer;

  constructor(
    private readonly api: Api,
    private readonly options: TelegramOutboundOptions,
  ) {
    this.pacer = new ChatPacer(EDIT_INTERVAL_MS, options.now);
  }

  async post(to: InboundMessage, text: string, kind: PostKind, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    if (kind === 'status') return [await this.send(to, clampStatus(text), { html: false, notify: false, reply: true })];
    let target = to;
    return sendPieces(splitMessage(text, PIECE_LIMIT), ledger, {
      classify: telegramWriteFailure,
      send: async (piece, i) => {
        const sent = await this.sendPiece(target, piece, i === 0);
        target = sent.to;
        return sent.id;
      },
    });
  }

  classifyWriteError(err: unknown): WriteFailure {
    return telegramWriteFailure(err);
  }

  async edit(to: InboundMessage, messageId: string, text: string): Promise<void> {
    const chatId = chatIdOf(to);
    const id = Number(messageId);
    const body = clampStatus(text);
    const wait = this.pacer.editWaitMs(chatId);
    if (wait > 0) return this.pacer.defer(chatId, id, body, wait, (t) => this.editLater(chatId, id, t));
    await this.editNow(chatId, id, body);
  }

  async remove(to: InboundMessage, messageId: string): Promise<void> {
    const chatId = chatIdOf(to);
    this.pacer.cancel(chatId, Number(messageId));
    try {
      await withTelegramRetries(() => this.api.deleteMessage(chatId, Number(messageId)), { idempotent: true, maxWaitMs: 30_000 });
    } catch (err) {
      if (classifyTelegramError(err).kind !== 'gone') throw err;
    }
  }

  async typing(to: InboundMessage): Promise<void> {
    const chatId = chatIdOf(to);
    // One attempt, never repeated: a late "typing…" after the answer would outlive the run.
    if (this.pacer.floodWaitMs(chatId) > 0) return;
    const thread = threadIdOf(to);
    try {
      await this.api.sendChatAction(chatId, 'typing', thread !== undefined ? { message_thread_id: thread } : {});
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind !== 'rate_limited') throw err;
      this.pacer.flood(chatId, failure.retryAfterMs);
    }
  }

  /** The card: the exact call in a code block, who asked, and an inline keyboard whose presses the gateway decides. */
  async approvalCard(to: InboundMessage, card: ApprovalCard): Promise<string> {
    const chatId = chatIdOf(to);
    const thread = threadIdOf(to);
    const replyTo = isGroup(to) && to.replyTo !== undefined ? Number(to.replyTo) : undefined;
    const message = await withTelegramRetries(
      () =>
        this.api.sendMessage(chatId, approvalHtml(card), {
          parse_mode: 'HTML',
          reply_markup: { inline_keyboard: [[{ text: 'Approve', callback_data: approvalData(card.id, 'approved') }, { text: 'Deny', callback_data: approvalData(card.id, 'denied') }]] },
          ...(thread !== undefined && { message_thread_id: thread }),
          ...(replyTo !== undefined && { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }),
        }),
      { idempotent: false, maxWaitMs: MAX_FLOOD_WAIT_MS },
    );
    return String(message.message_id);
  }

  /** The decided card: the same text and the decision, without its buttons. */
  async approvalDecided(to: InboundMessage, messageId: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void> {
    const text = `${approvalHtml(card)}\n\n${escapeHtml(decisionLine(outcome))}`;
    try {
      await withTelegramRetries(() => this.api.editMessageText(chatIdOf(to), Number(messageId), text, { parse_mode: 'HTML' }), { idempotent: true, maxWaitMs: 60_000 });
    } catch (err) {
      if (classifyTelegramError(err).kind !== 'not_modified') throw err;
    }
  }

  download(attachment: Attachment, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
    return downloadFile(this.api, this.options.apiRoot, this.options.token, attachment.ref, maxBytes, signal);
  }

  /** One piece of an answer: HTML when it renders within the limit, plain text when Telegram refuses the entities. */
  private async sendPiece(to: InboundMessage, piece: string, first: boolean): Promise<{ id: string; to: InboundMessage }> {
    const html = toTelegramHtml(piece);
    const fits = html !== '' && visibleLength(html) <= TELEGRAM_TEXT_LIMIT;
    try {
      return { id: await this.send(to, fits ? html : piece, { html: fits, notify: true, reply: first }), to };
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind === 'migrated') {
        this.options.log.info({ from: to.conversation, to: failure.chatId }, 'telegram group became a supergroup; posting to its new id');
        const moved: InboundMessage = { ...to, conversation: String(failure.chatId) };
        delete moved.replyTo;
        return this.sendPiece(moved, piece, first);
      }
      if (!fits || (failure.kind !== 'bad_entities' && failure.kind !== 'too_long')) throw err;
      this.options.log.warn({ chat: to.conversation, error: describeTelegramError(err) }, 'telegram refused the formatted text; sending it as plain text');
      return { id: await this.send(to, piece, { html: false, notify: true, reply: first }), to };
    }
  }

  /** sendMessage once (repeated only when Telegram surely did not post it: 429, or a request that never left). */
  private async send(to: InboundMessage, text: string, how: { html: boolean; notify: boolean; reply: boolean }): Promise<string> {
    const chatId = chatIdOf(to);
    const flooded = this.pacer.floodWaitMs(chatId);
    if (flooded > 0) await sleep(Math.min(flooded, MAX_FLOOD_WAIT_MS));
    const thread = threadIdOf(to);
    const replyTo = how.reply && isGroup(to) && to.replyTo !== undefined ? Number(to.replyTo) : undefined;
    const message = await withTelegramRetries(
      () =>
        this.api.sendMessage(chatId, text, {
          ...(how.html && { parse_mode: 'HTML' as const }),
          ...(thread !== undefined && { message_thread_id: thread }),
          ...(replyTo !== undefined && { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }),
          ...(!how.notify && { disable_notification: true, link_preview_options: { is_disabled: true } }),
        }),
      { idempotent: false, maxWaitMs: MAX_FLOOD_WAIT_MS, onWait: (failure, ms) => this.noteWait(chatId, 'sendMessage', failure, ms) },
    );
    return String(message.message_id);
  }

  private async editNow(chatId: number, messageId: number, text: string): Promise<void> {
    this.pacer.markEdit(chatId);
    try {
      await this.api.editMessageText(chatId, messageId, text, { link_preview_options: { is_disabled: true } });
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind === 'not_modified' || failure.kind === 'gone') return;
      if (failure.kind !== 'rate_limited') throw err;
      this.noteWait(chatId, 'editMessageText', failure, failure.retryAfterMs);
      this.pacer.defer(chatId, messageId, text, failure.retryAfterMs, (t) => this.editLater(chatId, messageId, t));
    }
  }

  /** A deferred edit, applied by a timer: its failure is logged (progress is best effort). */
  private editLater(chatId: number, messageId: number, text: string): void {
    const wait = this.pacer.editWaitMs(chatId);
    if (wait > 0) return this.pacer.defer(chatId, messageId, text, wait, (t) => this.editLater(chatId, messageId, t));
    this.editNow(chatId, messageId, text).catch((err: unknown) => this.options.log.warn({ chat: chatId, error: describeTelegramError(err) }, 'deferred status edit failed'));
  }

  private noteWait(chatId: number, method: string, failure: TelegramFailure, ms: number): void {
    if (failure.kind === 'rate_limited') this.pacer.flood(chatId, ms);
    this.options.log.info({ chat: chatId, method, failure: failure.kind, waitMs: ms }, 'telegram asked to wait; retrying after it');
  }
}

/** A status message is one message: only its newest lines are kept when it would pass the limit. */
function clampStatus(text: string): string {
  const trimmed = text.trim() || '…';
  if (trimmed.length <= TELEGRAM_TEXT_LIMIT) return trimmed;
  return `…${trimmed.slice(trimmed.length - (TELEGRAM_TEXT_LIMIT - 1))}`;
}

/** The card's question, the call in a code block (clipped to fit one message), and who asked. */
function approvalHtml(card: ApprovalCard): string {
  const { label, code } = cardSubject(card);
  const shown = code.length > 3_000 ? `${code.slice(0, 3_000)}\n… (${code.length - 3_000} more characters)` : code;
  return `<b>${escapeHtml(label)}</b>\n<pre>${escapeHtml(shown)}</pre>\n${escapeHtml(cardFooter(card))}`;
}
