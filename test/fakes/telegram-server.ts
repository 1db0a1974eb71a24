import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { buffer as readBody } from 'node:stream/consumers';
import type { AddressInfo } from 'node:net';
import { lookup } from 'mime-types';
import { parseText } from './telegram-html.js';
import { formToBody, imageSize, isUploadedFile, parseMultipart, photoDimensionsValid, photoSizes, type UploadedFile } from './telegram-upload.js';
import { clientGoneAfter } from './hold.js';

export { parseTelegramHtml, parseText } from './telegram-html.js';

/**
 * An in-process Telegram Bot API on 127.0.0.1 for driving the real grammY client through
 * TELEGRAM_API_ROOT. It answers with the Bot API's shapes ({ ok, result } / { ok: false,
 * error_code, description, parameters }) and its errors: 401 for a wrong token, 409 when a second
 * getUpdates arrives while one is pending (the pending one loses, as on Telegram) or while a
 * webhook is set, 400 "can't parse entities" for malformed HTML, "message is too long" past
 * 4,096 characters after entity parsing, "message is not modified", "message to edit/delete not
 * found", and scripted faults such as 429 with retry_after. Every call is recorded.
 *
 * Uploads (sendDocument, sendPhoto) arrive as multipart/form-data, as grammY sends them, and are
 * answered with the Message Telegram returns (a `document`, or `photo` sizes): a file over 50 MB
 * gets 413 "Request Entity Too Large", a photo that is not a PNG/JPEG/WebP IMAGE_PROCESS_FAILED,
 * one past sendPhoto's bounds PHOTO_INVALID_DIMENSIONS, a caption past 1,024 characters
 * "message caption is too long". Faults match uploads too (their `when` sees the parsed form).
 */

export const BOT_ID = 7_000_001;
export const BOT_USERNAME = 'switchboard_test_bot';
export const TOKEN = `${BOT_ID}:AAF-fake-token-for-tests_only`;

export interface RecordedCall {
  method: string;
  body: any;
  /** Date.now() when it arrived. */
  at: number;
  /** Date.now() when it was answered. */
  answeredAt?: number;
  /** The error_code it was answered with, if any. */
  error?: number;
  /** sendMessage: the id of the message it posted. */
  messageId?: number;
  /** Held before it took effect, and its client was gone by then: it never took effect. */
  dropped?: true;
}

export interface Fault {
  method: string;
  /** Only calls whose body matches (default: any). */
  when?: (body: any) => boolean;
  status: number;
  description: string;
  parameters?: { retry_after?: number; migrate_to_chat_id?: number };
  /** How many matching calls it answers (default 1). */
  times?: number;
  /** Perform the call, then drop the connection without answering (a lost response). */
  drop?: boolean;
}

export interface BotMessage {
  chatId: number;
  messageId: number;
  /** The visible text (entities parsed). */
  text: string;
  /** What was sent, as sent. */
  raw: string;
  parseMode?: string;
  replyTo?: number;
  threadId?: number;
  /** Sent with disable_notification (Switchboard's status messages are). */
  silent?: true;
  /** The inline keyboard the message shows now (reply_markup.inline_keyboard); an edit without one removes it. */
  keyboard?: { text: string; callback_data?: string }[][];
  /** A file the bot uploaded (sendDocument / sendPhoto); `text` is then its caption. */
  file?: SentFile;
  deleted: boolean;
  edits: number;
}

export interface SentFile {
  kind: 'document' | 'photo';
  fileId: string;
  /** The name it was uploaded under. */
  name: string;
  /** The document's mime_type as Telegram reports it (from the file name when the part says application/octet-stream). */
  mime?: string;
  bytes: Uint8Array;
  /** The caption as sent. */
  caption?: string;
}

export interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  username?: string;
}

export interface FakeFile {
  fileId: string;
  bytes: Uint8Array;
  /** Reported size (default: bytes.length); a large one without bytes models a file only its size matters for. */
  size?: number;
}

const TELEGRAM_FILE_LIMIT = 20 * 1024 * 1024;
/** "Bots can currently send files of any type of up to 50 MB in size." */
const TELEGRAM_UPLOAD_LIMIT = 50 * 1024 * 1024;
const CAPTION_LIMIT = 1024;

export const BOT_USER: TgUser = { id: BOT_ID, is_bot: true, first_name: 'Switchboard', username: BOT_USERNAME };

export interface FakeTelegram {
  /** http://127.0.0.1:PORT — the TELEGRAM_API_ROOT. */
  apiRoot: string;
  calls: RecordedCall[];
  /** Messages the bot posted, in order. */
  sent: BotMessage[];
  /** sendMessageDraft calls that took effect: the draft each showed, in order (a draft is a preview, not a message). */
  drafts: { chatId: number; draftId: number; text: string }[];
  webhook: { url: string; secret_token?: string; allowed_updates?: string[] } | undefined;
  commands: { command: string; description: string }[];
  /** Queues an update for getUpdates (with the next update_id unless it has one). `redeliver` ignores the confirmed offset (Telegram after a lost confirmation). */
  pushUpdate(update: Record<string, unknown>, options?: { redeliver?: boolean }): number;
  /** A user's message as Telegram sends it; the message id follows the chat's sequence. */
  message(fields: MessageFields): any;
  fault(fault: Fault): void;
  /** A user's press of an inline button on one of the bot's messages, as an update for getUpdates; returns the query id. */
  pressButton(from: TgUser, message: BotMessage, data: string): string;
  /** answerCallbackQuery calls, by query id. */
  callbackAnswers: Map<string, { text?: string; show_alert?: boolean }>;
  /**
   * Opt-in: `hold(call)` ms to wait before answering a call that has already taken effect (a slow
   * way back to the client, e.g. to stop a client between a post and its confirmation); 0 answers
   * at once. getUpdates is never held. `undefined` removes the hook.
   */
  holdResponses(hold: ((call: RecordedCall) => number) | undefined): void;
  /**
   * Opt-in: `hold(call)` ms to wait before a call takes effect; a call whose client is gone by
   * then never takes effect (it never reached Telegram: `dropped`). getUpdates is never held.
   */
  holdRequests(hold: ((call: RecordedCall) => number) | undefined): void;
  addFile(file: FakeFile): void;
  /** The bot's messages in one chat, in order. */
  sentTo(chatId: number): readonly BotMessage[];
  /** Calls of one method, in order. */
  callsOf(method: string): RecordedCall[];
  /** getUpdates calls waiting right now. */
  pendingPolls(): number;
  close(): Promise<void>;
}

export interface MessageFields {
  chat: { id: number; type: 'private' | 'group' | 'supergroup'; title?: string; is_forum?: boolean };
  from: TgUser;
  text?: string;
  caption?: string;
  entities?: any[];
  reply_to_message?: any;
  message_thread_id?: number;
  is_topic_message?: boolean;
  document?: any;
  photo?: any[];
}

interface PendingPoll {
  res: ServerResponse;
  offset: number;
  limit: number;
  timer: NodeJS.Timeout;
  body: any;
  call: RecordedCall;
}

export async function startFakeTelegram(options: { token?: string; keepCalls?: boolean } = {}): Promise<FakeTelegram> {
  const token = options.token ?? TOKEN;
  const calls: RecordedCall[] = [];
  const sent: BotMessage[] = [];
  // By chat: an edit or delete finds its message without scanning every chat's (a soak posts hundreds of thousands).
  const sentByChat = new Map<number, BotMessage[]>();
  const post = (m: BotMessage) => {
    sent.push(m);
    const list = sentByChat.get(m.chatId) ?? [];
    list.push(m);
    sentByChat.set(m.chatId, list);
  };
  const findSent = (chatId: number, messageId: number) => sentByChat.get(chatId)?.find((m) => m.messageId === messageId && !m.deleted);
  const drafts: { chatId: number; draftId: number; text: string }[] = [];
  const faults: Fault[] = [];
  const files = new Map<string, FakeFile & { path: string }>();
  const updates: { update: any; redeliver: boolean }[] = [];
  const nextMessageId = new Map<number, number>();
  let nextUpdateId = 100_000;
  let confirmed = 0;
  let pending: PendingPoll | undefined;
  let webhook: FakeTelegram['webhook'];
  let commands: FakeTelegram['commands'] = [];
  let hold: ((call: RecordedCall) => number) | undefined;
  let holdRequest: ((call: RecordedCall) => number) | undefined;
  const callbackAnswers = new Map<string, { text?: string; show_alert?: boolean }>();
  const openQueries = new Set<string>();

  const messageIdFor = (chatId: number) => {
    const id = (nextMessageId.get(chatId) ?? 0) + 1;
    nextMessageId.set(chatId, id);
    return id;
  };

  const server = createServer((req, res) => {
    void serve(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { ok: false, error_code: 500, description: `Internal Server Error: fake crashed: ${String(err)}` });
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (fileMatch) {
      if (fileMatch[1] !== token) return sendJson(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
      const file = [...files.values()].find((f) => f.path === decodeURIComponent(fileMatch[2]!));
      if (!file) return sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.bytes.byteLength });
      res.end(Buffer.from(file.bytes));
      return;
    }
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!match) return sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    const parsed = parseBody(await readBody(req), req.headers['content-type'] ?? '', url);
    const body = 'error' in parsed ? {} : parsed.body;
    const method = match[2]!;
    const call: RecordedCall = { method, body, at: Date.now() };
    if (options.keepCalls !== false) calls.push(call);
    const answer = (status: number, payload: any) => {
      call.answeredAt = Date.now();
      if (!payload.ok) call.error = payload.error_code;
      sendJson(res, status, payload);
    };
    // Telegram's front end refuses an oversized upload before it looks at the token or the method.
    if (Object.values(body).some((v) => isUploadedFile(v) && v.bytes.byteLength > TELEGRAM_UPLOAD_LIMIT))
      return answer(413, { ok: false, error_code: 413, description: 'Request Entity Too Large' });
    if (match[1] !== token) return answer(401, { ok: false, error_code: 401, description: 'Unauthorized' });
    if ('error' in parsed) return answer(400, { ok: false, error_code: 400, description: `Bad Request: ${parsed.error}` });
    const fault = faults.find((f) => f.method === method && (f.when?.(body) ?? true));
    if (fault) {
      fault.times = (fault.times ?? 1) - 1;
      if (fault.times <= 0) faults.splice(faults.indexOf(fault), 1);
      if (fault.drop) {
        // The call takes effect, but its response never arrives.
        const swallow = { writeHead: () => swallow, end: () => res.destroy() } as unknown as ServerResponse;
        return perform(method, body, call, swallow);
      }
      return answer(fault.status, {
        ok: false,
        error_code: fault.status,
        description: fault.description,
        ...(fault.parameters && { parameters: fault.parameters }),
      });
    }
    if (await clientGoneAfter(method === 'getUpdates' ? 0 : (holdRequest?.(call) ?? 0), req)) {
      call.dropped = true;
      return;
    }
    const holdMs = method === 'getUpdates' ? 0 : (hold?.(call) ?? 0);
    return perform(method, body, call, holdMs > 0 ? heldResponse(res, holdMs) : res);
  }

  function perform(method: string, body: any, call: RecordedCall, res: ServerResponse): void {
    const answer = (status: number, payload: any) => {
      call.answeredAt = Date.now();
      if (!payload.ok) call.error = payload.error_code;
      sendJson(res, status, payload);
    };
    const ok = (result: unknown) => answer(200, { ok: true, result });
    const bad = (description: string) => answer(400, { ok: false, error_code: 400, description: `Bad Request: ${description}` });
    switch (method) {
      case 'getMe':
        return ok({
          ...BOT_USER,
          can_join_groups: true,
          can_read_all_group_messages: false,
          supports_inline_queries: false,
          can_connect_to_business: false,
          has_main_web_app: false,
        });
      case 'setMyCommands':
        commands = body.commands;
        return ok(true);
      case 'deleteWebhook':
        webhook = undefined;
        return ok(true);
      case 'setWebhook':
        webhook = {
          url: body.url,
          ...(body.secret_token && { secret_token: body.secret_token }),
          ...(body.allowed_updates && { allowed_updates: body.allowed_updates }),
        };
        if (pending) endPoll(pending, 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
        return ok(true);
      case 'getWebhookInfo':
        return ok({ url: webhook?.url ?? '', has_custom_certificate: false, pending_update_count: updates.length });
      case 'getUpdates':
        return getUpdates(res, body, call);
      case 'sendMessageDraft': {
        // "Unique identifier for the target private chat"; "draft_id … must be non-zero"; text "0-4096 characters after entities parsing".
        const chatId = Number(body.chat_id);
        if (!(chatId > 0)) return bad('chat not found');
        if (!Number.isInteger(Number(body.draft_id)) || Number(body.draft_id) === 0) return bad('invalid draft_id specified');
        const parsed = parseText(body.text ?? '', body.parse_mode);
        if ('error' in parsed) return bad(parsed.error);
        if (parsed.text.length > 4096) return bad('message is too long');
        drafts.push({ chatId, draftId: Number(body.draft_id), text: parsed.text });
        return ok(true);
      }
      case 'sendMessage': {
        const chatId = Number(body.chat_id);
        const parsed = parseText(body.text, body.parse_mode);
        if ('error' in parsed) return bad(parsed.error);
        const messageId = messageIdFor(chatId);
        call.messageId = messageId;
        const replyTo = body.reply_parameters?.message_id;
        post({
          chatId,
          messageId,
          text: parsed.text,
          raw: body.text,
          ...(body.parse_mode && { parseMode: body.parse_mode }),
          ...(replyTo !== undefined && { replyTo }),
          ...(body.message_thread_id !== undefined && { threadId: body.message_thread_id }),
          ...(body.disable_notification === true && { silent: true as const }),
          ...(body.reply_markup?.inline_keyboard && { keyboard: body.reply_markup.inline_keyboard }),
          deleted: false,
          edits: 0,
        });
        return ok(messageObject(chatId, messageId, parsed.text, body));
      }
      case 'editMessageText': {
        const chatId = Number(body.chat_id);
        const target = findSent(chatId, Number(body.message_id));
        if (!target) return bad('message to edit not found');
        if (target.file) return bad('there is no text in the message to edit');
        const parsed = parseText(body.text, body.parse_mode);
        if ('error' in parsed) return bad(parsed.error);
        const keyboard = body.reply_markup?.inline_keyboard;
        if (parsed.text === target.text && JSON.stringify(keyboard) === JSON.stringify(target.keyboard)) {
          return bad(
            'message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
          );
        }
        if (keyboard) target.keyboard = keyboard;
        else delete target.keyboard;
        target.text = parsed.text;
        target.raw = body.text;
        if (body.parse_mode) target.parseMode = body.parse_mode;
        else delete target.parseMode;
        target.edits += 1;
        return ok({ ...messageObject(chatId, target.messageId, parsed.text, body), edit_date: Math.floor(Date.now() / 1000) });
      }
      case 'deleteMessage': {
        const target = findSent(Number(body.chat_id), Number(body.message_id));
        if (!target) return bad('message to delete not found');
        target.deleted = true;
        return ok(true);
      }
      case 'sendDocument':
      case 'sendPhoto':
        return sendMedia(method === 'sendPhoto' ? 'photo' : 'document', body, ok, bad);
      case 'sendChatAction':
        return ok(true);
      case 'answerCallbackQuery': {
        const id = String(body.callback_query_id);
        if (!openQueries.has(id) || callbackAnswers.has(id)) return bad('query is too old and response timeout expired or query ID is invalid');
        callbackAnswers.set(id, { ...(body.text !== undefined && { text: body.text }), ...(body.show_alert !== undefined && { show_alert: body.show_alert }) });
        return ok(true);
      }
      case 'getFile': {
        const file = files.get(body.file_id);
        if (!file) return bad('invalid file_id');
        const size = file.size ?? file.bytes.byteLength;
        if (size > TELEGRAM_FILE_LIMIT) return bad('file is too big');
        return ok({ file_id: file.fileId, file_unique_id: `u-${file.fileId}`, file_size: size, file_path: file.path });
      }
      default:
        return answer(404, { ok: false, error_code: 404, description: 'Not Found: method not found' });
    }
  }

  function messageObject(chatId: number, messageId: number, text: string, body: any) {
    return { ...messageBase(chatId, messageId, body), text };
  }

  function messageBase(chatId: number, messageId: number, body: any) {
    return {
      message_id: messageId,
      from: BOT_USER,
      chat: chatId > 0 ? { id: chatId, type: 'private', first_name: 'User' } : { id: chatId, type: 'supergroup', title: 'Group' },
      date: Math.floor(Date.now() / 1000),
      ...(body.message_thread_id !== undefined && { message_thread_id: body.message_thread_id, is_topic_message: true }),
    };
  }

  /** sendDocument / sendPhoto: the file is kept (getFile serves it back) and the Message carries its document or photo sizes. */
  function sendMedia(kind: 'document' | 'photo', body: any, ok: (result: unknown) => void, bad: (description: string) => void): void {
    const upload: unknown = body[kind];
    if (!isUploadedFile(upload)) return bad(`there is no ${kind} in the request`);
    const caption = body.caption === undefined ? undefined : parseText(String(body.caption), body.parse_mode);
    if (caption && 'error' in caption) return bad(caption.error);
    if (caption && caption.text.length > CAPTION_LIMIT) return bad('message caption is too long');
    const size = kind === 'photo' ? imageSize(upload.bytes) : undefined;
    if (kind === 'photo' && !size) return bad('IMAGE_PROCESS_FAILED');
    if (size && !photoDimensionsValid(size)) return bad('PHOTO_INVALID_DIMENSIONS');
    const chatId = Number(body.chat_id);
    const messageId = messageIdFor(chatId);
    const fileId = `${kind}-${chatId}-${messageId}`;
    files.set(fileId, { fileId, bytes: upload.bytes, path: `${kind}s/file_${files.size + 1}` });
    const mime = documentMime(upload);
    const replyTo = body.reply_parameters?.message_id;
    post({
      chatId,
      messageId,
      text: caption?.text ?? '',
      raw: body.caption ?? '',
      ...(body.parse_mode && { parseMode: body.parse_mode }),
      ...(replyTo !== undefined && { replyTo }),
      ...(body.message_thread_id !== undefined && { threadId: body.message_thread_id }),
      ...(body.disable_notification === true && { silent: true as const }),
      file: {
        kind,
        fileId,
        name: upload.name,
        ...(kind === 'document' && mime && { mime }),
        bytes: upload.bytes,
        ...(body.caption !== undefined && { caption: String(body.caption) }),
      },
      deleted: false,
      edits: 0,
    });
    const media =
      kind === 'photo'
        ? { photo: photoSizes(fileId, size!, upload.bytes.byteLength) }
        : {
            document: {
              file_name: upload.name,
              ...(mime && { mime_type: mime }),
              file_id: fileId,
              file_unique_id: `u-${fileId}`,
              file_size: upload.bytes.byteLength,
            },
          };
    ok({ ...messageBase(chatId, messageId, body), ...media, ...(caption && { caption: caption.text }) });
  }

  function getUpdates(res: ServerResponse, body: any, call: RecordedCall): void {
    if (webhook)
      return endPoll(
        { res, call } as PendingPoll,
        409,
        "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      );
    if (pending) endPoll(pending, 409, 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running');
    const offset = Number(body.offset ?? 0);
    const limit = Number(body.limit ?? 100);
    if (offset > 0) confirmed = Math.max(confirmed, offset);
    const ready = takeUpdates(offset, limit);
    const timeout = Number(body.timeout ?? 0);
    if (ready.length > 0 || timeout <= 0) return endPoll({ res, call } as PendingPoll, 200, ready);
    const poll: PendingPoll = { res, offset, limit, body, call, timer: setTimeout(() => endPoll(poll, 200, []), timeout * 1000) };
    pending = poll;
    res.once('close', () => {
      if (pending === poll) {
        clearTimeout(poll.timer);
        pending = undefined;
      }
    });
  }

  function takeUpdates(offset: number, limit: number): any[] {
    const out: any[] = [];
    for (let i = 0; i < updates.length && out.length < limit; i++) {
      const u = updates[i]!;
      if (u.redeliver || u.update.update_id >= Math.max(offset, confirmed)) {
        out.push(u.update);
        if (u.redeliver) u.redeliver = false;
      }
    }
    // Confirmed updates are forgotten, as on Telegram.
    for (let i = updates.length - 1; i >= 0; i--) if (!updates[i]!.redeliver && updates[i]!.update.update_id < confirmed) updates.splice(i, 1);
    return out;
  }

  function endPoll(poll: PendingPoll, status: number, payload: any[] | string): void {
    if (poll.timer) clearTimeout(poll.timer);
    if (pending === poll) pending = undefined;
    if (poll.res.writableEnded || poll.res.destroyed) return;
    poll.call.answeredAt = Date.now();
    if (typeof payload === 'string') {
      poll.call.error = status;
      sendJson(poll.res, status, { ok: false, error_code: status, description: payload });
    } else {
      sendJson(poll.res, 200, { ok: true, result: payload });
    }
  }

  function wake(): void {
    if (!pending) return;
    const ready = takeUpdates(pending.offset, pending.limit);
    if (ready.length > 0) endPoll(pending, 200, ready);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    apiRoot: `http://127.0.0.1:${port}`,
    calls,
    sent,
    drafts,
    get webhook() {
      return webhook;
    },
    get commands() {
      return commands;
    },
    pushUpdate(update, opts = {}) {
      const full = { update_id: ++nextUpdateId, ...update };
      updates.push({ update: full, redeliver: opts.redeliver === true });
      wake();
      return full.update_id as number;
    },
    message(fields) {
      const { chat, ...rest } = fields;
      const full = chat.type === 'private' ? { ...chat, first_name: fields.from.first_name } : { title: 'Test group', ...chat };
      return { message_id: messageIdFor(chat.id), date: Math.floor(Date.now() / 1000), chat: full, ...rest };
    },
    fault(f) {
      faults.push({ ...f });
    },
    callbackAnswers,
    pressButton(from, message, data) {
      const id = String(nextUpdateId * 7 + openQueries.size);
      openQueries.add(id);
      const chat =
        message.chatId > 0 ? { id: message.chatId, type: 'private', first_name: 'User' } : { id: message.chatId, type: 'supergroup', title: 'Group' };
      const shown = {
        message_id: message.messageId,
        from: BOT_USER,
        chat,
        date: Math.floor(Date.now() / 1000),
        text: message.text,
        ...(message.keyboard && { reply_markup: { inline_keyboard: message.keyboard } }),
      };
      updates.push({
        update: { update_id: ++nextUpdateId, callback_query: { id, from, message: shown, chat_instance: `ci-${message.chatId}`, data } },
        redeliver: false,
      });
      wake();
      return id;
    },
    sentTo(chatId) {
      return sentByChat.get(chatId) ?? [];
    },
    holdRequests(fn) {
      holdRequest = fn;
    },
    holdResponses(fn) {
      hold = fn;
    },
    addFile(file) {
      files.set(file.fileId, { ...file, path: `documents/file_${files.size + 1}` });
    },
    callsOf(method) {
      return calls.filter((c) => c.method === method);
    },
    pendingPolls() {
      return pending ? 1 : 0;
    },
    async close() {
      if (pending) endPoll(pending, 200, []);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A response that reaches the client `ms` after the fake wrote it (the call itself has already taken effect). */
function heldResponse(res: ServerResponse, ms: number): ServerResponse {
  let head: [number, OutgoingHttpHeaders] = [200, {}];
  const held = {
    writeHead: (status: number, headers: OutgoingHttpHeaders) => {
      head = [status, headers];
      return held;
    },
    end: (text: string) => {
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(...head);
        res.end(text);
      }, ms);
    },
  };
  return held as unknown as ServerResponse;
}

/** A call's parameters: JSON, a multipart form (uploads), or the query string. */
function parseBody(raw: Buffer, contentType: string, url: URL): { body: any } | { error: string } {
  if (/^multipart\/form-data/i.test(contentType)) {
    const form = parseMultipart(raw, contentType);
    if ('error' in form) return form;
    try {
      return { body: formToBody(form) };
    } catch {
      return { error: "can't parse JSON object in a form field" };
    }
  }
  return { body: raw.length > 0 ? JSON.parse(raw.toString('utf8')) : Object.fromEntries(url.searchParams) };
}

/** Telegram names the type from the file name when the client sent none (grammY sends application/octet-stream for everything). */
function documentMime(file: UploadedFile): string | undefined {
  if (file.type !== '' && file.type !== 'application/octet-stream') return file.type;
  return lookup(file.name) || undefined;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
