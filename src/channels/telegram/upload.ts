import { InputFile } from 'grammy';
import type { InboundMessage, OutgoingFile } from '../types.js';
import { classifyTelegramError, describeTelegramError, grammySignal } from './errors.js';
import { chatIdOf } from './ids.js';
import { movedTo, placement, type TelegramWriter } from './writer.js';

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

/**
 * A workspace file where the answer goes (a reply in groups, in its forum topic), its caption as
 * plain text: a png/jpeg/webp of at most 10 MB as a photo, anything else as a document.
 */
export async function upload(w: TelegramWriter, to: InboundMessage, file: OutgoingFile, signal: AbortSignal): Promise<string> {
  const bytes = await file.read();
  const as: UploadAs = PHOTO_TYPES.has(file.mime) && bytes.byteLength <= PHOTO_MAX_BYTES ? 'photo' : 'document';
  return uploadAs(w, to, { name: uploadName(file.name), bytes, ...(file.caption !== undefined && { caption: file.caption }) }, as, signal);
}

/** An upload Telegram refused before posting anything is tried again where it can land: the group's new id, or as a document. */
async function uploadAs(w: TelegramWriter, to: InboundMessage, file: UploadPayload, as: UploadAs, signal: AbortSignal): Promise<string> {
  try {
    return await sendFile(w, to, file, as, signal);
  } catch (err) {
    const failure = classifyTelegramError(err);
    if (failure.kind === 'migrated') {
      w.log.info({ from: to.conversation, to: failure.chatId }, 'telegram group became a supergroup; uploading to its new id');
      return uploadAs(w, movedTo(to, failure.chatId), file, as, signal);
    }
    if (as !== 'photo' || failure.kind !== 'bad_photo') throw err;
    w.log.info({ chat: to.conversation, error: describeTelegramError(err) }, 'telegram refused the image as a photo; sending it as a document');
    return uploadAs(w, to, file, 'document', signal);
  }
}

/** sendPhoto / sendDocument (multipart) once, repeated only when Telegram surely did not post it: 429, or a request that never left. */
async function sendFile(w: TelegramWriter, to: InboundMessage, file: UploadPayload, as: UploadAs, signal: AbortSignal): Promise<string> {
  const chatId = chatIdOf(to);
  // No parse_mode: the caption is the model's plain text and shows as written.
  const other = { ...placement(to, true), ...(file.caption !== undefined && { caption: file.caption }) };
  const message = await w.paced(
    chatId,
    as === 'photo' ? 'sendPhoto' : 'sendDocument',
    (): Promise<{ message_id: number }> => {
      const input = new InputFile(file.bytes, file.name);
      return as === 'photo' ? w.api.sendPhoto(chatId, input, other, grammySignal(signal)) : w.api.sendDocument(chatId, input, other, grammySignal(signal));
    },
    { idempotent: false, signal },
  );
  return String(message.message_id);
}

/** grammY writes the file name unquoted into the part's header and throws on a line break: characters that would end or split it are replaced. */
function uploadName(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f";\\]/g, '_') || 'file';
}
