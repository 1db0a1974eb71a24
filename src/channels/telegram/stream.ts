import { randomInt } from 'node:crypto';
import { splitMessage } from '../kit/chunk.js';
import { memoryLedger, sendPieces, type PieceLedger } from '../kit/pieces.js';
import type { InboundMessage, StreamShown } from '../types.js';
import { classifyTelegramError, describeTelegramError, telegramWriteFailure } from './errors.js';
import { chatIdOf, isGroup, threadIdOf } from './ids.js';
import { MAX_FLOOD_WAIT_MS, paceKey, PIECE_LIMIT, placement, rendered, TELEGRAM_TEXT_LIMIT, type TelegramWriter } from './writer.js';

/** Shown after a streamed answer's text while the model is still writing it. */
export const STILL_WRITING = ' …';

/**
 * One write of the answer so far, as plain text with a "still writing" mark: the first message
 * whose text changed is edited, or the next one posted once the text passes a message's length.
 * One write per call keeps the chat's budget; a 429 or a budget not yet free leaves it for the
 * next call (the newest text then) instead of waiting.
 */
export async function streamAnswer(w: TelegramWriter, to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
  const chatId = chatIdOf(to);
  const key = paceKey(chatId);
  if (w.pacer.waitMs(key) > 0) return shown;
  if (w.options.drafts && !isGroup(to)) return streamDraft(w, to, text, shown);
  const pieces = splitMessage(text, PIECE_LIMIT);
  const i = pieces.findIndex((_, k) => shownText(pieces, k) !== shown.texts[k]);
  if (i < 0) return shown;
  const display = shownText(pieces, i);
  w.pacer.wrote(key);
  try {
    if (i < shown.ids.length) {
      await w.api.editMessageText(chatId, Number(shown.ids[i]), display, w.previews('answer'));
      return { ids: shown.ids, texts: shown.texts.map((t, k) => (k === i ? display : t)) };
    }
    const message = await w.api.sendMessage(chatId, display, { ...placement(to, i === 0), ...w.previews('answer') });
    return { ids: [...shown.ids, String(message.message_id)], texts: [...shown.texts, display] };
  } catch (err) {
    const failure = classifyTelegramError(err);
    if (failure.kind === 'not_modified') return { ids: shown.ids, texts: shown.texts.map((t, k) => (k === i ? display : t)) };
    if (failure.kind !== 'rate_limited') throw err;
    w.noteWait(chatId, 'stream', failure, failure.retryAfterMs);
    return shown;
  }
}

/**
 * The final text in the streamed messages: piece i, rendered as post renders it, edits streamed
 * message i; pieces past them are posted; streamed messages left over go. Each write waits for
 * its turn on the chat's budget: a final write is never skipped.
 */
export async function finishStream(
  w: TelegramWriter,
  to: InboundMessage,
  shown: StreamShown,
  text: string,
  remove: (to: InboundMessage, messageId: string) => Promise<void>,
  ledger: PieceLedger = memoryLedger(),
): Promise<string[]> {
  // A draft is a preview, not a message: the answer is posted as one (the draft gives way to it).
  if (shown.ids.some(isDraft)) return w.postPieces(to, text, ledger);
  const pieces = splitMessage(text, PIECE_LIMIT);
  const target = { to };
  const ids = await sendPieces(pieces, ledger, {
    classify: telegramWriteFailure,
    limit: TELEGRAM_TEXT_LIMIT,
    resendable: (i) => i < shown.ids.length,
    // A new message waits for its turn before it is marked started (an edit paces itself and may be repeated).
    ready: async (i) => {
      if (i >= shown.ids.length) await w.pacer.turn(paceKey(chatIdOf(target.to)), MAX_FLOOD_WAIT_MS);
    },
    send: async (piece, i) => {
      const id = shown.ids[i];
      if (id !== undefined) {
        await w.editPiece(to, id, piece);
        return id;
      }
      const sent = await w.sendPiece(target.to, piece, false, true);
      target.to = sent.to;
      return sent.id;
    },
    placeholder: w.placeholder(target, () => false),
  });
  for (const extra of shown.ids.slice(pieces.length)) {
    await remove(to, extra).catch((err: unknown) =>
      w.log.warn({ chat: to.conversation, error: describeTelegramError(err) }, 'could not remove a streamed message left over'),
    );
  }
  return ids;
}

/**
 * The answer so far as the chat's draft (private chats, TELEGRAM_DRAFTS=1): one draft per
 * streamed step, animated by Telegram; past a message's length it shows the beginning marked.
 */
async function streamDraft(w: TelegramWriter, to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
  const chatId = chatIdOf(to);
  const id = shown.ids[0] ?? `${DRAFT}${newDraftId()}`;
  const display = `${splitMessage(text, PIECE_LIMIT)[0] ?? ''}${STILL_WRITING}`;
  if (shown.texts[0] === display) return shown;
  w.pacer.wrote(paceKey(chatId));
  const thread = threadIdOf(to);
  try {
    await w.api.raw.sendMessageDraft({
      chat_id: chatId,
      draft_id: Number(id.slice(DRAFT.length)),
      text: display,
      ...(thread !== undefined && { message_thread_id: thread }),
    });
  } catch (err) {
    const failure = classifyTelegramError(err);
    if (failure.kind !== 'rate_limited') throw err;
    w.noteWait(chatId, 'sendMessageDraft', failure, failure.retryAfterMs);
    return shown;
  }
  return { ids: [id], texts: [display] };
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
