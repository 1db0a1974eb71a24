import type { Api } from 'grammy';
import type { Logger } from '../../log.js';
import { splitMessage } from '../kit/chunk.js';
import { ConversationPacer } from '../kit/pacer.js';
import { previewsAllowed, type PreviewKind } from '../kit/link-previews.js';
import { memoryLedger, PLACEHOLDER, sendPieces, type PieceLedger, type Placeholder } from '../kit/pieces.js';
import type { CallFailure } from '../kit/retry.js';
import type { InboundMessage } from '../types.js';
import { classifyTelegramError, describeTelegramError, telegramWriteFailure, withTelegramRetries, type TelegramFailure } from './errors.js';
import { toTelegramHtml, visibleLength } from './format.js';
import { chatIdOf, isGroup, threadIdOf } from './ids.js';

/** Telegram's limit: 4,096 UTF-16 units of text after entity parsing. */
export const TELEGRAM_TEXT_LIMIT = 4096;
/** Pieces are cut from the Markdown a little under the limit; rendering never lengthens the visible text. */
export const PIECE_LIMIT = 4000;
/**
 * Writes of one chat (status edits, a streamed answer's edits and posts) share one budget:
 * Telegram's flood control allows about one message a second in a private chat and twenty a
 * minute in a group, so a little more than that apart.
 */
export const PRIVATE_CHAT_GAP_MS = 1_100;
export const GROUP_CHAT_GAP_MS = 3_100;
/** Longest a write waits for its turn in a flooded chat before trying anyway (the retry helper has the same cap per 429). */
export const MAX_FLOOD_WAIT_MS = 300_000;

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

type Previews = { link_preview_options?: { is_disabled: true } };

/** The pacer's key for a chat: its id as the conversation says it. */
export const paceKey = (chatId: number) => String(chatId);

/**
 * What every Telegram write shares: the chat's pacer, where a message lands, its preview
 * setting, and sendMessage of a piece. The parts of the adapter (outbound, stream, upload,
 * approval-card) write only through here, so no write to a chat skips its turn.
 */
export class TelegramWriter {
  readonly pacer: ConversationPacer;

  constructor(
    readonly api: Api,
    readonly options: TelegramOutboundOptions,
  ) {
    // Group and supergroup ids are negative.
    this.pacer = new ConversationPacer((chat) => (Number(chat) < 0 ? GROUP_CHAT_GAP_MS : PRIVATE_CHAT_GAP_MS), options.now);
  }

  get log(): Logger {
    return this.options.log;
  }

  /**
   * A write that must happen, on the chat's budget: each attempt (a repeat after a 429 too)
   * waits for its turn. Repeated only as `idempotent` allows (see errors.ts).
   */
  paced<T>(
    chatId: number,
    method: string,
    call: () => Promise<T>,
    how: { idempotent: boolean; maxWaitMs?: number; signal?: AbortSignal; turnTaken?: boolean; rideOn?: boolean },
  ): Promise<T> {
    const { signal, maxWaitMs = MAX_FLOOD_WAIT_MS } = how;
    // The caller already waited for this write's turn (see SendPiecesOptions.ready), or it rides
    // on the write just made (a placeholder's fill, ConversationPacer.rideOn): only a repeat waits again.
    let taken = how.turnTaken === true || (how.rideOn === true && this.pacer.rideOn(paceKey(chatId)));
    return withTelegramRetries(
      async () => {
        if (taken) taken = false;
        else await this.pacer.turn(paceKey(chatId), maxWaitMs, signal);
        signal?.throwIfAborted();
        return call();
      },
      { idempotent: how.idempotent, maxWaitMs, ...(signal && { signal }), onWait: (failure, ms) => this.noteWait(chatId, method, failure, ms) },
    );
  }

  /** An answer or notice in pieces, each through `ledger`; a group that became a supergroup is followed. */
  postPieces(to: InboundMessage, text: string, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    const target = { to };
    return sendPieces(splitMessage(text, PIECE_LIMIT), ledger, {
      classify: telegramWriteFailure,
      limit: TELEGRAM_TEXT_LIMIT,
      ready: () => this.pacer.turn(paceKey(chatIdOf(target.to)), MAX_FLOOD_WAIT_MS),
      send: async (piece, i) => {
        const sent = await this.sendPiece(target.to, piece, i === 0, true);
        target.to = sent.to;
        return sent.id;
      },
      placeholder: this.placeholder(target, (i) => i === 0),
    });
  }

  /**
   * Telegram's sendMessage has no idempotency key and a chat's messages cannot be listed, so a
   * piece of a journaled reply is posted as PLACEHOLDER first (its id journaled: the person's
   * notification) and then edited into the piece; see ../kit/pieces.ts. `target` follows a group
   * that became a supergroup.
   */
  placeholder(target: { to: InboundMessage }, replies: (index: number) => boolean): Placeholder {
    return {
      // After a move: no reply (the old message ids do not carry over), and a turn of its own.
      place: (i) =>
        this.followingMigration(target, (to, moved) =>
          this.send(to, PLACEHOLDER, { html: false, notify: true, reply: !moved && replies(i), previews: 'answer', turnTaken: !moved }),
        ),
      fill: (id, piece, _i, justPlaced) => this.followingMigration(target, (to, moved) => this.editPiece(to, id, piece, justPlaced && !moved)),
    };
  }

  /** `write` in `target.to`, and once more in the new chat when the group became a supergroup (target follows it). */
  private async followingMigration<T>(target: { to: InboundMessage }, write: (to: InboundMessage, moved: boolean) => Promise<T>): Promise<T> {
    try {
      return await write(target.to, false);
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind !== 'migrated') throw err;
      target.to = movedTo(target.to, failure.chatId);
      return write(target.to, true);
    }
  }

  /**
   * A piece edited into a message (a placeholder, a streamed message): HTML as sendPiece renders
   * it, plain when Telegram refuses the entities. Repeatable. `rideOn`: the edit of a placeholder
   * this delivery just posted goes at once (see ConversationPacer.rideOn).
   */
  async editPiece(to: InboundMessage, messageId: string, piece: string, rideOn = false): Promise<void> {
    const chatId = chatIdOf(to);
    const { html, fits } = rendered(piece);
    const edit = (text: string, asHtml: boolean, ride: boolean) =>
      this.paced(
        chatId,
        'editMessageText',
        () => this.api.editMessageText(chatId, Number(messageId), text, { ...(asHtml && { parse_mode: 'HTML' as const }), ...this.previews('answer') }),
        { idempotent: true, rideOn: ride },
      );
    const unlessNotModified = (err: unknown) => {
      if (classifyTelegramError(err).kind !== 'not_modified') throw err;
    };
    try {
      await edit(fits ? html : piece, fits, rideOn);
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind === 'not_modified') return;
      if (!fits || (failure.kind !== 'bad_entities' && failure.kind !== 'too_long')) throw err;
      this.log.warn({ chat: to.conversation, error: describeTelegramError(err) }, 'telegram refused the formatted text; editing it in as plain text');
      await edit(piece, false, false).catch(unlessNotModified);
    }
  }

  /** One piece of an answer: HTML when it renders within the limit, plain text when Telegram refuses the entities. */
  async sendPiece(to: InboundMessage, piece: string, first: boolean, turnTaken = false): Promise<{ id: string; to: InboundMessage }> {
    const { html, fits } = rendered(piece);
    try {
      return { id: await this.send(to, fits ? html : piece, { html: fits, notify: true, reply: first, previews: 'answer', turnTaken }), to };
    } catch (err) {
      const failure = classifyTelegramError(err);
      if (failure.kind === 'migrated') {
        this.log.info({ from: to.conversation, to: failure.chatId }, 'telegram group became a supergroup; posting to its new id');
        return this.sendPiece(movedTo(to, failure.chatId), piece, first);
      }
      if (!fits || (failure.kind !== 'bad_entities' && failure.kind !== 'too_long')) throw err;
      this.log.warn({ chat: to.conversation, error: describeTelegramError(err) }, 'telegram refused the formatted text; sending it as plain text');
      return { id: await this.send(to, piece, { html: false, notify: true, reply: first, previews: 'answer' }), to };
    }
  }

  /** sendMessage once (repeated only when Telegram surely did not post it: 429, or a request that never left). */
  async send(
    to: InboundMessage,
    text: string,
    how: { html: boolean; notify: boolean; reply: boolean; previews: PreviewKind; turnTaken?: boolean },
  ): Promise<string> {
    const chatId = chatIdOf(to);
    const message = await this.paced(
      chatId,
      'sendMessage',
      () =>
        this.api.sendMessage(chatId, text, {
          ...(how.html && { parse_mode: 'HTML' as const }),
          ...placement(to, how.reply),
          ...(!how.notify && { disable_notification: true }),
          ...this.previews(how.previews),
        }),
      { idempotent: false, turnTaken: how.turnTaken === true },
    );
    return String(message.message_id);
  }

  /**
   * Every sendMessage and editMessageText takes its preview setting from here (see
   * ../link-previews.ts): `link_preview_options` (`disable_web_page_preview` is deprecated). Telegram
   * decides again on each edit, so edits carry it too. sendMessageDraft has no such field: a draft
   * is a preview of the message, not a message, and shows no link preview.
   */
  previews(kind: PreviewKind): Previews {
    return previewsAllowed(this.options.linkPreviews, kind) ? {} : { link_preview_options: { is_disabled: true } };
  }

  noteWait(chatId: number, method: string, failure: TelegramFailure | CallFailure, ms: number): void {
    if (failure.kind === 'rate_limited') this.pacer.flood(paceKey(chatId), ms);
    this.log.info({ chat: chatId, method, failure: failure.kind, waitMs: ms }, 'telegram asked to wait; retrying after it');
  }
}

/** A piece as Telegram HTML, and whether that fits one message (else it goes as plain text). */
export function rendered(piece: string): { html: string; fits: boolean } {
  const html = toTelegramHtml(piece);
  return { html, fits: html !== '' && visibleLength(html) <= TELEGRAM_TEXT_LIMIT };
}

/** Where a post lands: in the request's forum topic, and (in groups, when asked) as a reply to the request. */
export function placement(
  to: InboundMessage,
  reply: boolean,
): { message_thread_id?: number; reply_parameters?: { message_id: number; allow_sending_without_reply: true } } {
  const thread = threadIdOf(to);
  const replyTo = reply && isGroup(to) && to.replyTo !== undefined ? Number(to.replyTo) : undefined;
  return {
    ...(thread !== undefined && { message_thread_id: thread }),
    ...(replyTo !== undefined && { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true as const } }),
  };
}

/** The same request in a group that became a supergroup: its new id, and no reply (the old message ids do not carry over). */
export function movedTo(to: InboundMessage, chatId: number): InboundMessage {
  const moved: InboundMessage = { ...to, conversation: String(chatId) };
  delete moved.replyTo;
  return moved;
}
