import type { Message, MessageEntity } from 'grammy/types';
import { formatDecimalBytes } from '../../lib/text.js';
import { COMMANDS } from '../commands.js';
import type { Attachment, InboundMessage } from '../types.js';
import { eventIdOf, META_CHAT_TYPE, PLATFORM } from './ids.js';

export interface BotIdentity {
  id: number;
  username: string;
}

export interface NormaliseOptions {
  me: BotIdentity;
  /** Largest file the bot will fetch (Telegram's own cap included). */
  maxBytes: number;
  now: number;
  newId: () => string;
}

/**
 * What to do with one incoming Telegram message:
 * - `ignore`: not for us (a group message that does not address the bot, another bot, …);
 * - `refuse`: for us, but answered at once with `reply` and not queued (too large, empty);
 * - `message`: the normalised message for the intake.
 */
export type Normalised =
  | { kind: 'ignore'; reason: string }
  | { kind: 'refuse'; reason: 'too_large' | 'empty'; reply: string; message: InboundMessage }
  | { kind: 'message'; message: InboundMessage; trigger: Trigger };

/** Why a message reached the bot. */
export type Trigger = 'dm' | 'mention' | 'reply' | 'command';

/** Telegram's "Telegram" service account that posts automatic forwards from a linked channel. */
const TELEGRAM_SERVICE_USER = 777000;

/** The command that asks the bot in a group without mentioning it: /ask text, /ask@bot text. */
export const ASK_COMMAND = 'ask';

/**
 * A Telegram message → the normalised message, or why not. Pure: the bot's identity, the size
 * cap and the clock come in as options. Who may talk to the bot is the intake's access gate.
 */
export function normaliseMessage(msg: Message, options: NormaliseOptions): Normalised {
  const { me } = options;
  const from = msg.from;
  if (!from) return { kind: 'ignore', reason: 'no sender (channel post)' };
  if (from.is_bot) return { kind: 'ignore', reason: from.id === me.id ? 'own message' : 'sent by a bot' };
  if (msg.is_automatic_forward || from.id === TELEGRAM_SERVICE_USER) return { kind: 'ignore', reason: 'automatic forward' };

  const text = msg.text ?? msg.caption ?? '';
  const entities = msg.entities ?? msg.caption_entities ?? [];
  const isPrivate = msg.chat.type === 'private';
  const command = leadingCommand(text, entities);
  if (command?.addressee && command.addressee.toLowerCase() !== me.username.toLowerCase()) return { kind: 'ignore', reason: 'command for another bot' };

  const cut: MessageEntity[] = [];
  let trigger: Trigger | undefined = isPrivate ? 'dm' : undefined;
  for (const e of entities) {
    const mentionsMe =
      (e.type === 'mention' && text.slice(e.offset + 1, e.offset + e.length).toLowerCase() === me.username.toLowerCase()) ||
      (e.type === 'text_mention' && e.user.id === me.id);
    if (mentionsMe) {
      cut.push(e);
      trigger ??= 'mention';
    }
  }
  if (command && (command.name === ASK_COMMAND || command.name === 'start' || command.name in COMMANDS)) trigger ??= 'command';
  if (!trigger && repliesToBot(msg, me)) trigger = 'reply';
  if (!trigger) return { kind: 'ignore', reason: command ? 'command not addressed to the bot' : 'group message not addressed to the bot' };

  let body = stripSpans(text, cut);
  if (command?.name === ASK_COMMAND) body = body.replace(/^\/\S+\s*/, '');
  // /start is Telegram's first message to a bot (with an optional deep-link payload): it is answered as /help.
  else if (command?.name === 'start') body = '/help';
  body = body.replace(/^[\s,:;]+/, '').trim();

  const topic = msg.is_topic_message === true && msg.message_thread_id !== undefined ? String(msg.message_thread_id) : undefined;
  const id = options.newId();
  const message: InboundMessage = {
    v: 1,
    id,
    platform: PLATFORM,
    conversation: String(msg.chat.id),
    ...(topic !== undefined && { thread: topic }),
    sender: { id: String(from.id), name: displayName(from), ...(from.username && { handle: from.username.toLowerCase() }) },
    where: isPrivate ? { kind: 'dm' } : { kind: 'group', ids: [String(msg.chat.id)] },
    text: body,
    attachments: attachmentsOf(msg),
    eventId: eventIdOf(msg.chat.id, msg.message_id),
    receivedAt: options.now,
    replyTo: String(msg.message_id),
    meta: { [META_CHAT_TYPE]: msg.chat.type },
  };

  const tooLarge = message.attachments.filter((a) => a.size !== undefined && a.size > options.maxBytes);
  if (tooLarge.length > 0) {
    const names = tooLarge.map((a) => `${a.name} (${formatDecimalBytes(a.size!)})`).join(', ');
    return {
      kind: 'refuse',
      reason: 'too_large',
      message,
      reply: `Sorry, I can't take ${names}: files over ${formatDecimalBytes(options.maxBytes)} are too large for me. Please send a smaller file, or paste the part you need.`,
    };
  }
  if (message.text === '' && message.attachments.length === 0) {
    if (trigger === 'command' || trigger === 'mention') {
      return { kind: 'refuse', reason: 'empty', message, reply: `Write your request with it, for example: /${ASK_COMMAND} what is in notes.md?` };
    }
    return { kind: 'ignore', reason: 'nothing to read (no text, document or photo)' };
  }
  return { kind: 'message', message, trigger };
}

/** A bot command at the very start of the text: `/name` or `/name@bot`. */
function leadingCommand(text: string, entities: readonly MessageEntity[]): { name: string; addressee?: string } | undefined {
  const e = entities.find((x) => x.type === 'bot_command' && x.offset === 0);
  if (!e) return undefined;
  const [name, addressee] = text.slice(1, e.length).split('@');
  return { name: (name ?? '').toLowerCase(), ...(addressee && { addressee }) };
}

/**
 * A reply to one of the bot's messages. In a forum topic every message "replies" to the topic's
 * first (service) message even when the user did not reply to anything; that one does not count.
 */
function repliesToBot(msg: Message, me: BotIdentity): boolean {
  const target = msg.reply_to_message;
  if (!target || target.from?.id !== me.id) return false;
  if (target.forum_topic_created !== undefined) return false;
  return !(msg.is_topic_message && target.message_id === msg.message_thread_id);
}

/** The text with the given entity spans cut out (UTF-16 offsets, as Telegram counts them). */
function stripSpans(text: string, spans: readonly MessageEntity[]): string {
  let out = '';
  let at = 0;
  for (const e of [...spans].sort((a, b) => a.offset - b.offset)) {
    const left = out + text.slice(at, e.offset);
    out = left;
    at = e.offset + e.length;
    // "hey @bot, what…" reads "hey what…": the punctuation addressing the bot goes with it.
    if (/^[,:;]/.test(text.slice(at))) at += 1;
    if ((left === '' || /\s$/.test(left)) && /^\s/.test(text.slice(at))) at += 1;
  }
  return out + text.slice(at);
}

function displayName(from: NonNullable<Message['from']>): string {
  const full = [from.first_name, from.last_name].filter(Boolean).join(' ');
  return from.username ? `${full} (@${from.username})` : full;
}

/** Documents, the largest size of a photo, audio, voice notes and videos: each a file the worker can fetch by file_id. */
function attachmentsOf(msg: Message): Attachment[] {
  const n = msg.message_id;
  const files: Attachment[] = [];
  const add = (ref: string, name: string, size?: number, mime?: string) =>
    files.push({ name, ref, ...(size !== undefined && { size }), ...(mime !== undefined && { mime }) });
  if (msg.document) add(msg.document.file_id, msg.document.file_name ?? `document-${n}`, msg.document.file_size, msg.document.mime_type);
  const photo = msg.photo?.at(-1);
  if (photo) add(photo.file_id, `photo-${n}.jpg`, photo.file_size, 'image/jpeg');
  if (msg.audio) add(msg.audio.file_id, msg.audio.file_name ?? `audio-${n}.mp3`, msg.audio.file_size, msg.audio.mime_type);
  if (msg.voice) add(msg.voice.file_id, `voice-${n}.ogg`, msg.voice.file_size, msg.voice.mime_type);
  if (msg.video) add(msg.video.file_id, msg.video.file_name ?? `video-${n}.mp4`, msg.video.file_size, msg.video.mime_type);
  return files;
}
