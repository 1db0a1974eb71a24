import { randomInt } from 'node:crypto';
import { InputFile, type Api } from 'grammy';
import type { Logger } from '../../log.js';
import { splitMessage } from '../kit/chunk.js';
import type { ApprovalCard, ApprovalOutcome, Attachment, InboundMessage, OutboundAdapter, OutgoingFile, PostKind, StreamShown } from '../types.js';
import { cardFooter, cardSubject, decisionLine } from '../kit/approval-card.js';
import { approvalData } from './approval-data.js';
import { memoryLedger, sendPieces, type PieceLedger, type WriteFailure } from '../kit/pieces.js';
import { classifyTelegramError, describeTelegramError, grammySignal, telegramWriteFailure, withTelegramRetries, type TelegramFailure } from './errors.js';
import { sleep } from '../../lib/sleep.js';
import type { CallFailure } from '../kit/retry.js';
import { downloadFile } from './download.js';
import { escapeHtml, toTelegramHtml, visibleLength } from './format.js';
import { chatIdOf, isGroup, PLATFORM, threadIdOf } from './ids.js';
import { ChatPacer } from './pacing.js';
import { previewsAllowed, type PreviewKind } from '../kit/link-previews.js';

/** Telegram's limit: 4,096 UTF-16 units of text after entity parsing. */
export const TELEGRAM_TEXT_LIMIT = 4096;
/** Pieces are cut from the Markdown a little under the limit; rendering never lengthens the visible text. */
export const PIECE_LIMIT = 4000;
/** About one status edit per second per chat. */
export const EDIT_INTERVAL_MS = 1000;
/**
 * Writes of one chat (status edits, a streamed answer's edits and posts) share one budget:
 * Telegram's flood control allows about one message a second in a private chat and twenty a
 * minute in a group, so a little more than that apart.
 */
export const PRIVATE_CHAT_GAP_MS = 1_100;
export const GROUP_CHAT_GAP_MS = 3_100;
/** Shown after a streamed answer's text while the model is still writing it. */
export const STILL_WRITING = ' …';
/** A chat action shows for about 5 s; refreshed a little before it fades. */
export const TYPING_INTERVAL_MS = 4500;
/** Longest a post waits for a chat's flood wait before trying anyway (the retry helper has the same cap per 429). */
const MAX_FLOOD_WAIT_MS = 300_000;
/** The Bot API's cap on a file a bot uploads: "Bots can currently send files of any type of up to 50 MB in size" (sendDocument). */
export const UPLOAD_MAX_BYTES = 50 * 1024 * 1024;
/**
 * sendPhoto: "The photo must be at most 10 MB in size". Counted in decimal megabytes, so an image
 * near the line goes as a document rather than risk a refusal.
 */
export const PHOTO_MAX_BYTES = 10_000_000;
/** The image types Telegram shows inline as a photo (it recompresses them); every other file goes as a document, byte for byte. */
const PHOTO_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp']);

type UploadAs = 'photo' | 'document';

interface UploadPayload {
  name: string;
  bytes: Uint8Array;
  caption?: string;
}

export interface TelegramOutboundOptions {
  token: string;
  /** The Bot API root files are downloaded from. */
  apiRoot: string;
  log: Logger;
  /** Test seam: the clock the pacer reads. */
  now?: () => number;
  /** TELEGRAM_DRAFTS: a private chat's answer streams as a draft (sendMessageDraft), posted as a message once final. */
  drafts?: boolean;
  /** LINK_PREVIEWS: answers may show link previews (default: no message does; see ../link-previews.ts). */
  linkPreviews?: boolean;
}

/**
 * The outbound half over the Bot API (grammY's `Api`, plain HTTP): works in a worker that has
 * no poller and no webhook. Answers are rendered to Telegram HTML, split under the limit and
 * posted in order (replying to the request in groups, in its forum topic); a piece Telegram
 * refuses to parse is sent again as plain text. The status message is plain text, edited no
 * more than once a second per chat and deferred (never dropped, never blocking) during a 429.
 * A file (send_file) is a multipart sendPhoto or sendDocument in the same place as an answer.
 */
export class TelegramOutbound implements OutboundAdapter {
  readonly platform = PLATFORM;
  readonly editIntervalMs = EDIT_INTERVAL_MS;
  readonly typingIntervalMs = TYPING_INTERVAL_MS;
  readonly uploadMaxBytes = UPLOAD_MAX_BYTES;
  private readonly pacer: ChatPacer;

  constructor(
    private readonly api: Api,
    private readonly options: TelegramOutboundOptions,
  ) {
    // Group and supergroup ids are negative.
    this.pacer = new ChatPacer((chatId) => (chatId < 0 ? GROUP_CHAT_GAP_MS : PRIVATE_CHAT_GAP_MS), options.now);
  }

  async post(to: InboundMessage, text: string, kind: PostKind, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    if (kind === 'status') return [await this.send(to, clampStatus(text), { html: false, notify: false, reply: true, previews: 'status' })];
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

  streamIntervalMs(to: InboundMessage): number {
    return this.pacer.gapMs(chatIdOf(to));
  }

  /**
   * One write of the answer so far, as plain text with a "still writing" mark: the first message
   * whose text changed is edited, or the next one posted once the text passes a message's length.
   * One write per call keeps the chat's budget; a 429 or a budget not yet free leaves it for the
   * next call (the newest text then) instead of waiting.
   */
  async streamAnswer(to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
    const chatId = chatIdOf(to);
    if (this.pacer.editWaitMs(chatId) > 0) return shown;
    if (this.options.drafts && !isGroup(to)) return this.streamDraft(to, text, shown);
    const pieces = splitMessage(text, PIECE_LIMIT);
    const i = pieces.findIndex((_, k) => shownText(pieces, k) !== shown.texts[k]);
    if (i < 0) return shown;
    const display = shownText(pieces, i);
    this.pacer.markEdit(chatId);
    try {
      if (i < shown.ids.length) {
        await this.api.editMessageText(chatId, Number(shown.ids[i]), display, this.previews('answer'));
        return { ids: shown.ids, texts: shown.texts.map((t, k) => (k === i ? display : t)) };
      }
      const message = await this.api.sendMessage(chatId, display, { ...placement(to, i === 0), ...this.previews('answer') });
      return { ids: [...shown.ids, String(message.message_id)], texts: [...shown.texts, display] };
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind === 'not_modified') return { ids: shown.ids, texts: shown.texts.map((t, k) => (k === i ? display : t)) };
      if (failure.kind !== 'rate_limited') throw err;
      this.noteWait(chatId, 'stream', failure, failure.retryAfterMs);
      return shown;
    }
  }

  /**
   * The final text in the streamed messages: piece i, rendered as post renders it, edits streamed
   * message i (on the chat's budget); pieces past them are posted; streamed messages left over go.
   */
  async finishStream(to: InboundMessage, shown: StreamShown, text: string, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    // A draft is a preview, not a message: the answer is posted as one (the draft gives way to it).
    if (shown.ids.some(isDraft)) return this.post(to, text, 'answer', ledger);
    const pieces = splitMessage(text, PIECE_LIMIT);
    let target = to;
    const ids = await sendPieces(pieces, ledger, {
      classify: telegramWriteFailure,
      resendable: (i) => i < shown.ids.length,
      send: async (piece, i) => {
        const id = shown.ids[i];
        if (id !== undefined) {
          await this.editPiece(to, id, piece);
          return id;
        }
        const sent = await this.sendPiece(target, piece, false);
        target = sent.to;
        return sent.id;
      },
    });
    for (const extra of shown.ids.slice(pieces.length)) {
      await this.remove(to, extra).catch((err: unknown) => this.options.log.warn({ chat: to.conversation, error: describeTelegramError(err) }, 'could not remove a streamed message left over'));
    }
    return ids;
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
    const message = await withTelegramRetries(
      () =>
        this.api.sendMessage(chatId, approvalHtml(card), {
          parse_mode: 'HTML',
          reply_markup: { inline_keyboard: [[{ text: 'Approve', callback_data: approvalData(card.id, 'approved') }, { text: 'Deny', callback_data: approvalData(card.id, 'denied') }]] },
          ...placement(to, true),
          ...this.previews('card'),
        }),
      { idempotent: false, maxWaitMs: MAX_FLOOD_WAIT_MS },
    );
    return String(message.message_id);
  }

  /** The decided card: the same text and the decision, without its buttons. */
  async approvalDecided(to: InboundMessage, messageId: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void> {
    const text = `${approvalHtml(card)}\n\n${escapeHtml(decisionLine(outcome))}`;
    try {
      await withTelegramRetries(() => this.api.editMessageText(chatIdOf(to), Number(messageId), text, { parse_mode: 'HTML', ...this.previews('card') }), { idempotent: true, maxWaitMs: 60_000 });
    } catch (err) {
      if (classifyTelegramError(err).kind !== 'not_modified') throw err;
    }
  }

  download(attachment: Attachment, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
    return downloadFile(this.api, this.options.apiRoot, this.options.token, attachment.ref, maxBytes, signal);
  }

  /**
   * A workspace file where the answer goes (a reply in groups, in its forum topic), its caption as
   * plain text: a png/jpeg/webp of at most 10 MB as a photo, anything else as a document.
   */
  async upload(to: InboundMessage, file: OutgoingFile, signal: AbortSignal): Promise<string> {
    const bytes = await file.read();
    const as: UploadAs = PHOTO_TYPES.has(file.mime) && bytes.byteLength <= PHOTO_MAX_BYTES ? 'photo' : 'document';
    return this.uploadAs(to, { name: uploadName(file.name), bytes, ...(file.caption !== undefined && { caption: file.caption }) }, as, signal);
  }

  /** One piece of an answer: HTML when it renders within the limit, plain text when Telegram refuses the entities. */
  private async sendPiece(to: InboundMessage, piece: string, first: boolean): Promise<{ id: string; to: InboundMessage }> {
    const html = toTelegramHtml(piece);
    const fits = html !== '' && visibleLength(html) <= TELEGRAM_TEXT_LIMIT;
    try {
      return { id: await this.send(to, fits ? html : piece, { html: fits, notify: true, reply: first, previews: 'answer' }), to };
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind === 'migrated') {
        this.options.log.info({ from: to.conversation, to: failure.chatId }, 'telegram group became a supergroup; posting to its new id');
        return this.sendPiece(movedTo(to, failure.chatId), piece, first);
      }
      if (!fits || (failure.kind !== 'bad_entities' && failure.kind !== 'too_long')) throw err;
      this.options.log.warn({ chat: to.conversation, error: describeTelegramError(err) }, 'telegram refused the formatted text; sending it as plain text');
      return { id: await this.send(to, piece, { html: false, notify: true, reply: first, previews: 'answer' }), to };
    }
  }

  /**
   * The answer so far as the chat's draft (private chats, TELEGRAM_DRAFTS=1): one draft per
   * streamed step, animated by Telegram; past a message's length it shows the beginning marked.
   */
  private async streamDraft(to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
    const chatId = chatIdOf(to);
    const id = shown.ids[0] ?? `${DRAFT}${newDraftId()}`;
    const display = `${splitMessage(text, PIECE_LIMIT)[0] ?? ''}${STILL_WRITING}`;
    if (shown.texts[0] === display) return shown;
    this.pacer.markEdit(chatId);
    const thread = threadIdOf(to);
    try {
      await this.api.raw.sendMessageDraft({ chat_id: chatId, draft_id: Number(id.slice(DRAFT.length)), text: display, ...(thread !== undefined && { message_thread_id: thread }) });
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind !== 'rate_limited') throw err;
      this.noteWait(chatId, 'sendMessageDraft', failure, failure.retryAfterMs);
      return shown;
    }
    return { ids: [id], texts: [display] };
  }

  /** A streamed message becomes a final piece: HTML as sendPiece renders it, plain when Telegram refuses the entities. */
  private async editPiece(to: InboundMessage, messageId: string, piece: string): Promise<void> {
    const chatId = chatIdOf(to);
    const wait = this.pacer.editWaitMs(chatId);
    if (wait > 0) await sleep(Math.min(wait, MAX_FLOOD_WAIT_MS));
    const html = toTelegramHtml(piece);
    const fits = html !== '' && visibleLength(html) <= TELEGRAM_TEXT_LIMIT;
    const edit = (text: string, asHtml: boolean) =>
      withTelegramRetries(
        () => {
          this.pacer.markEdit(chatId);
          return this.api.editMessageText(chatId, Number(messageId), text, { ...(asHtml && { parse_mode: 'HTML' as const }), ...this.previews('answer') });
        },
        { idempotent: true, maxWaitMs: MAX_FLOOD_WAIT_MS, onWait: (failure, ms) => this.noteWait(chatId, 'editMessageText', failure, ms) },
      );
    try {
      await edit(fits ? html : piece, fits);
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind === 'not_modified') return;
      if (!fits || (failure.kind !== 'bad_entities' && failure.kind !== 'too_long')) throw err;
      this.options.log.warn({ chat: to.conversation, error: describeTelegramError(err) }, 'telegram refused the formatted text; editing it in as plain text');
      await edit(piece, false).catch((e: unknown) => {
        if (classifyTelegramError(e).kind !== 'not_modified') throw e;
      });
    }
  }

  /** sendMessage once (repeated only when Telegram surely did not post it: 429, or a request that never left). */
  private async send(to: InboundMessage, text: string, how: { html: boolean; notify: boolean; reply: boolean; previews: PreviewKind }): Promise<string> {
    const chatId = chatIdOf(to);
    const flooded = this.pacer.floodWaitMs(chatId);
    if (flooded > 0) await sleep(Math.min(flooded, MAX_FLOOD_WAIT_MS));
    const message = await withTelegramRetries(
      () =>
        this.api.sendMessage(chatId, text, {
          ...(how.html && { parse_mode: 'HTML' as const }),
          ...placement(to, how.reply),
          ...(!how.notify && { disable_notification: true }),
          ...this.previews(how.previews),
        }),
      { idempotent: false, maxWaitMs: MAX_FLOOD_WAIT_MS, onWait: (failure, ms) => this.noteWait(chatId, 'sendMessage', failure, ms) },
    );
    return String(message.message_id);
  }

  /** An upload Telegram refused before posting anything is tried again where it can land: the group's new id, or as a document. */
  private async uploadAs(to: InboundMessage, file: UploadPayload, as: UploadAs, signal: AbortSignal): Promise<string> {
    try {
      return await this.sendFile(to, file, as, signal);
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind === 'migrated') {
        this.options.log.info({ from: to.conversation, to: failure.chatId }, 'telegram group became a supergroup; uploading to its new id');
        return this.uploadAs(movedTo(to, failure.chatId), file, as, signal);
      }
      if (as !== 'photo' || failure.kind !== 'bad_photo') throw err;
      this.options.log.info({ chat: to.conversation, error: describeTelegramError(err) }, 'telegram refused the image as a photo; sending it as a document');
      return this.uploadAs(to, file, 'document', signal);
    }
  }

  /** sendPhoto / sendDocument (multipart) once, repeated only when Telegram surely did not post it: 429, or a request that never left. */
  private async sendFile(to: InboundMessage, file: UploadPayload, as: UploadAs, signal: AbortSignal): Promise<string> {
    const chatId = chatIdOf(to);
    const flooded = this.pacer.floodWaitMs(chatId);
    if (flooded > 0) await sleep(Math.min(flooded, MAX_FLOOD_WAIT_MS), signal);
    signal.throwIfAborted();
    const method = as === 'photo' ? 'sendPhoto' : 'sendDocument';
    // No parse_mode: the caption is the model's plain text and shows as written.
    const other = { ...placement(to, true), ...(file.caption !== undefined && { caption: file.caption }) };
    const message = await withTelegramRetries(
      (): Promise<{ message_id: number }> => {
        const input = new InputFile(file.bytes, file.name);
        return as === 'photo' ? this.api.sendPhoto(chatId, input, other, grammySignal(signal)) : this.api.sendDocument(chatId, input, other, grammySignal(signal));
      },
      { idempotent: false, maxWaitMs: MAX_FLOOD_WAIT_MS, signal, onWait: (failure, ms) => this.noteWait(chatId, method, failure, ms) },
    );
    return String(message.message_id);
  }

  private async editNow(chatId: number, messageId: number, text: string): Promise<void> {
    this.pacer.markEdit(chatId);
    try {
      await this.api.editMessageText(chatId, messageId, text, this.previews('status'));
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

  /**
   * Every sendMessage and editMessageText takes its preview setting from here (see
   * ../link-previews.ts): `link_preview_options` (`disable_web_page_preview` is deprecated). Telegram
   * decides again on each edit, so edits carry it too. sendMessageDraft has no such field: a draft
   * is a preview of the message, not a message, and shows no link preview.
   */
  private previews(kind: PreviewKind): { link_preview_options?: { is_disabled: true } } {
    return previewsAllowed(this.options.linkPreviews, kind) ? {} : { link_preview_options: { is_disabled: true } };
  }

  private noteWait(chatId: number, method: string, failure: TelegramFailure | CallFailure, ms: number): void {
    if (failure.kind === 'rate_limited') this.pacer.flood(chatId, ms);
    this.options.log.info({ chat: chatId, method, failure: failure.kind, waitMs: ms }, 'telegram asked to wait; retrying after it');
  }
}

/** Where a post lands: in the request's forum topic, and (in groups, when asked) as a reply to the request. */
function placement(to: InboundMessage, reply: boolean): { message_thread_id?: number; reply_parameters?: { message_id: number; allow_sending_without_reply: true } } {
  const thread = threadIdOf(to);
  const replyTo = reply && isGroup(to) && to.replyTo !== undefined ? Number(to.replyTo) : undefined;
  return {
    ...(thread !== undefined && { message_thread_id: thread }),
    ...(replyTo !== undefined && { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true as const } }),
  };
}

/** A streamed "message" that is a draft: `draft:<draft_id>`. */
const DRAFT = 'draft:';
const isDraft = (id: string) => id.startsWith(DRAFT);

/** A non-zero draft id, new for each streamed step (Telegram animates changes of one draft id). */
const newDraftId = () => randomInt(1, 2 ** 31);

/** What streamed message k shows: its piece, and the last one the "still writing" mark. */
function shownText(pieces: readonly string[], k: number): string {
  return k === pieces.length - 1 ? `${pieces[k]}${STILL_WRITING}` : pieces[k]!;
}

/** The same request in a group that became a supergroup: its new id, and no reply (the old message ids do not carry over). */
function movedTo(to: InboundMessage, chatId: number): InboundMessage {
  const moved: InboundMessage = { ...to, conversation: String(chatId) };
  delete moved.replyTo;
  return moved;
}

/** grammY writes the file name unquoted into the part's header and throws on a line break: characters that would end or split it are replaced. */
function uploadName(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f";\\]/g, '_') || 'file';
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
