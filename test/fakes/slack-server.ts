import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { buffer as readBytes, text as readBody } from 'node:stream/consumers';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { clientGoneAfter } from './hold.js';

/**
 * An in-process fake of Slack's Web API (and Socket Mode) on 127.0.0.1 for driving the real
 * @slack/web-api and Bolt clients. Answers with Slack's shapes: HTTP 200 `{ ok: true, … }` or
 * `{ ok: false, error }`, 429 with Retry-After and `{ ok: false, error: 'ratelimited' }`. Keeps
 * the messages and reactions it was asked to make and records every call. Files are uploaded as
 * Slack's external upload flow does it: files.getUploadURLExternal gives an upload URL on this
 * server, the bytes are POSTed there (raw or multipart), files.completeUploadExternal shares them.
 * conversations.history and conversations.replies list the bot's messages and the user messages
 * a test adds (`addMessage`), with their metadata when asked for it (`include_all_metadata`).
 */

export const BOT_TOKEN = 'xoxb-test-bot-token';
export const APP_TOKEN = 'xapp-test-app-token';
export const BOT_USER_ID = 'U0BOT';
export const BOT_ID = 'B0BOT';
export const TEAM_ID = 'T0FAKE';
/** Slack's hard limit on `text` (the recommended size is 4,000). */
export const TEXT_LIMIT = 40_000;
/** `markdown_text` of one chat.startStream / appendStream / stopStream call ("Limit this field to 12,000 characters"). */
export const STREAM_TEXT_LIMIT = 12_000;

export interface Call {
  method: string;
  params: Record<string, any>;
  token: string | undefined;
  at: number;
  /** What was answered: the status and Slack's `error`, if any. */
  status: number;
  error?: string;
  /** Held before it took effect (holdRequests), and its client was gone by then: it never took effect. */
  dropped?: true;
}

export interface FakeMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  text: string;
  edits: string[];
  /** The message's Block Kit blocks as last posted or updated (parsed), if it has any. */
  blocks?: Record<string, any>[];
  /** The blocks of each chat.update, in order (undefined for an update without blocks). */
  blockEdits: (Record<string, any>[] | undefined)[];
  deleted: boolean;
  /** The chat.postMessage (or chat.startStream) parameters it was posted with. */
  params: Record<string, any>;
  /** Its message metadata (chat.postMessage's `metadata`, parsed), as conversations.history / replies show it with include_all_metadata. */
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  /** Started with chat.startStream: its stream is open (`streaming`), and the `markdown_text` of each start / append / stop call. */
  stream?: { streaming: boolean; chunks: string[] };
}

/** A scripted answer for the next call of a method, instead of the normal one. */
export type Failure =
  | { status: 429; retryAfter: number }
  | { error: string }
  /** Do the call, then cut the connection: the client never learns it happened. */
  | { drop: true }
  /** Answer this call normally (to script a failure of a later call). */
  | { pass: true };

/** A message a person wrote (the fake never sees them posted): what a reply answers, a thread's parent. */
export interface FakeUserMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  user: string;
  text: string;
}

/** A chat.postEphemeral: a message only `user` sees. */
export interface FakeEphemeral {
  channel: string;
  user: string;
  text: string;
  thread_ts?: string;
  message_ts: string;
}

/** The pseudo-method under which POSTs of file bytes to an upload URL are recorded (and can be scripted with `fail`). */
export const UPLOAD_URL = 'upload_url';

/** A file shared with files.completeUploadExternal. */
export interface FakeUpload {
  id: string;
  /** As given to files.getUploadURLExternal. */
  filename: string;
  /** The `length` announced to files.getUploadURLExternal. */
  length: number;
  title?: string;
  /** What arrived at the upload URL. */
  bytes: Uint8Array;
  /** The name of the multipart part the bytes came in (undefined for a raw body). */
  partName?: string;
  channel_id?: string;
  thread_ts?: string;
  initial_comment?: string;
}

export interface FakeFile {
  id: string;
  name: string;
  mimetype: string;
  size: number;
  url_private: string;
  url_private_download: string;
}

export interface FakeSlack {
  /** http://127.0.0.1:PORT/api/ */
  apiUrl: string;
  origin: string;
  calls: Call[];
  messages: FakeMessage[];
  ephemerals: FakeEphemeral[];
  /** Reactions by `channel:ts`, in the order they are currently present. */
  reactions: Map<string, string[]>;
  /** Every reactions.add/remove that succeeded, as `+name` / `-name` per `channel:ts`. */
  reactionLog: Map<string, string[]>;
  fileRequests: { path: string; authorization: string | undefined }[];
  /** Files shared with files.completeUploadExternal, in order. */
  uploads: FakeUpload[];
  fail(method: string, ...failures: Failure[]): void;
  /**
   * Opt-in: `hold(call)` ms to wait before answering a call that has already taken effect (a slow
   * way back to the client: a worker that dies meanwhile never learns the outcome); 0 answers at
   * once. `undefined` removes the hook.
   */
  holdResponses(hold: ((call: Call) => number) | undefined): void;
  /** Opt-in: `hold(call)` ms to wait before a call takes effect; one whose client is gone by then never does (`dropped`). */
  holdRequests(hold: ((call: Call) => number) | undefined): void;
  /** A person's message in `channel` (in `thread_ts`'s thread), for the listings; its ts follows the fake's own (after every message so far). */
  addMessage(channel: string, text: string, fields?: { ts?: string; thread_ts?: string; user?: string }): FakeUserMessage;
  addFile(name: string, bytes: Uint8Array, mimetype: string): FakeFile;
  /** Calls of one method, successful ones only unless `all`. */
  callsOf(method: string, all?: boolean): Call[];
  /** Socket Mode: connected clients, sending an envelope, and the acks received. */
  socket: {
    connections: number;
    send(payload: unknown, type?: string, retryAttempt?: number): string;
    acks: { envelope_id: string; payload?: unknown }[];
    /** Cuts every socket, as when Slack recycles a connection without a `disconnect` message. */
    drop(): void;
  };
  /** Ends every open stream, as Slack does by itself some minutes after a stream started: appends then answer message_not_in_streaming_state. */
  expireStreams(): void;
  close(): Promise<void>;
}

/** Every bot scope the README asks for, as Slack lists them in `x-oauth-scopes`. */
export const REQUIRED_SCOPES = [
  'app_mentions:read',
  'channels:history',
  'chat:write',
  'chat:write.public',
  'commands',
  'files:read',
  'files:write',
  'groups:history',
  'im:history',
  'mpim:history',
  'reactions:write',
];

/**
 * `botToken`: the bot token it accepts (BOT_TOKEN unless a test brings its own). `scopes`: the
 * bot's granted scopes, sent as Slack does in the `x-oauth-scopes` header of every Web API
 * answer to the bot token (no header unless given).
 */
export async function startFakeSlack(options: { botToken?: string; scopes?: string[] } = {}): Promise<FakeSlack> {
  const botToken = options.botToken ?? BOT_TOKEN;
  const calls: Call[] = [];
  const messages: FakeMessage[] = [];
  const ephemerals: FakeEphemeral[] = [];
  const userMessages: FakeUserMessage[] = [];
  let hold: ((call: Call) => number) | undefined;
  let holdRequest: ((call: Call) => number) | undefined;
  /** Answers being held (holdResponses): released when the fake closes. */
  const held = new Set<() => void>();
  const reactions = new Map<string, string[]>();
  const reactionLog = new Map<string, string[]>();
  const failures = new Map<string, Failure[]>();
  const files = new Map<string, { file: FakeFile; bytes: Uint8Array }>();
  const fileRequests: FakeSlack['fileRequests'] = [];
  const uploads: FakeUpload[] = [];
  /** Uploads begun with files.getUploadURLExternal, by the ticket in their upload URL. */
  const tickets = new Map<string, { id: string; filename: string; length: number; bytes?: Uint8Array; partName?: string; completed: boolean }>();
  let uploadSeq = 0;
  const sockets = new Set<WebSocket>();
  const acks: { envelope_id: string; payload?: unknown }[] = [];
  let tsSeq = 0;
  let envelopeSeq = 0;
  const baseSeconds = Math.floor(Date.now() / 1000);
  const nextTs = () => `${baseSeconds}.${String(++tsSeq).padStart(6, '0')}`;

  const server = createServer((req, res) => {
    void serve(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { ok: false, error: `fake_slack_crashed: ${String(err)}` });
      else res.destroy();
    });
  });
  const wss = new WebSocketServer({ server, path: '/link' });
  wss.on('connection', (ws) => {
    sockets.add(ws);
    ws.on('close', () => sockets.delete(ws));
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data)) as { envelope_id: string; payload?: unknown };
      acks.push(msg);
    });
    ws.send(JSON.stringify({ type: 'hello', num_connections: sockets.size, debug_info: { host: 'fake-slack' }, connection_info: { app_id: 'A0FAKE' } }));
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method === 'GET' && url.pathname.startsWith('/files-pri/')) return serveFile(req, res, url.pathname);
    if (req.method === 'POST' && url.pathname.startsWith('/upload/v1/')) return serveUpload(req, res, url.pathname.slice('/upload/v1/'.length));
    if (!url.pathname.startsWith('/api/')) return send(res, 404, { ok: false, error: 'unknown_method' });
    const method = url.pathname.slice('/api/'.length);
    const params = parseBody(await readBody(req), req.headers['content-type'] ?? '');
    const auth = req.headers.authorization;
    const token = auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : (params.token as string | undefined);
    const call: Call = { method, params, token, at: Date.now(), status: 200 };
    calls.push(call);
    if (await clientGoneAfter(holdRequest?.(call) ?? 0, req)) {
      call.dropped = true;
      return;
    }

    const failure = failures.get(method)?.shift();
    if (failure && 'status' in failure) {
      call.status = 429;
      call.error = 'ratelimited';
      return send(res, 429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(failure.retryAfter) });
    }
    if (failure && 'error' in failure) {
      call.error = failure.error;
      return send(res, 200, { ok: false, error: failure.error });
    }
    const expected = method === 'apps.connections.open' ? APP_TOKEN : botToken;
    const body = !token ? { ok: false, error: 'not_authed' } : token !== expected ? { ok: false, error: 'invalid_auth' } : handle(method, params);
    if (body.ok === false) call.error = String(body.error);
    if (failure && 'drop' in failure) {
      res.socket?.destroy();
      return;
    }
    const scopeHeader: Record<string, string> = options.scopes && token === botToken ? { 'x-oauth-scopes': options.scopes.join(',') } : {};
    const holdMs = hold?.(call) ?? 0;
    if (holdMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => (held.delete(release), resolve()), holdMs);
        const release = () => (clearTimeout(timer), resolve());
        held.add(release);
      });
    }
    if (res.destroyed) return;
    send(res, 200, body, scopeHeader);
  }

  /** A new message the bot posted (chat.postMessage, or the start of a stream). */
  function post(p: Record<string, any>, text: string, extra: Partial<FakeMessage>): FakeMessage {
    const message: FakeMessage = {
      channel: String(p.channel),
      ts: nextTs(),
      text,
      edits: [],
      blockEdits: [],
      deleted: false,
      params: p,
      ...(p.thread_ts && { thread_ts: String(p.thread_ts) }),
      ...extra,
    };
    messages.push(message);
    return message;
  }

  function handle(method: string, p: Record<string, any>): Record<string, unknown> {
    switch (method) {
      case 'auth.test':
        return {
          ok: true,
          url: 'https://fake.slack.com/',
          team: 'Fake Team',
          user: 'switchboard',
          team_id: TEAM_ID,
          user_id: BOT_USER_ID,
          bot_id: BOT_ID,
          is_enterprise_install: false,
        };
      case 'chat.postMessage': {
        if (!p.channel) return { ok: false, error: 'channel_not_found' };
        const text = String(p.text ?? '');
        const blocks = parseBlocks(p.blocks);
        if (blocks === 'invalid') return { ok: false, error: 'invalid_blocks' };
        if (!text.trim() && !blocks) return { ok: false, error: 'no_text' };
        if (text.length > TEXT_LIMIT) return { ok: false, error: 'msg_too_long' };
        const metadata = parseMetadata(p.metadata);
        if (typeof metadata === 'string') return { ok: false, error: metadata };
        const message = post(p, text, { ...(blocks && { blocks }), ...(metadata && { metadata }) });
        return { ok: true, channel: message.channel, ts: message.ts, message: messageView(message) };
      }
      case 'conversations.history':
      case 'conversations.replies':
        return listMessages(method, p);
      case 'chat.startStream':
      case 'chat.appendStream':
      case 'chat.stopStream':
        return handleStream(method, p);
      case 'chat.update': {
        const message = messages.find((m) => m.channel === p.channel && m.ts === p.ts && !m.deleted);
        if (!message) return { ok: false, error: 'message_not_found' };
        // "The message is currently streaming text and cannot be edited."
        if (message.stream?.streaming) return { ok: false, error: 'streaming_state_conflict' };
        const text = String(p.text ?? '');
        const blocks = parseBlocks(p.blocks);
        if (blocks === 'invalid') return { ok: false, error: 'invalid_blocks' };
        if (text.length > TEXT_LIMIT) return { ok: false, error: 'msg_too_long' };
        message.text = text;
        message.edits.push(text);
        message.blockEdits.push(blocks);
        // As Slack: an update without blocks keeps the message's blocks only when it has no text either.
        if (blocks) message.blocks = blocks;
        else if (text) delete message.blocks;
        return {
          ok: true,
          channel: message.channel,
          ts: message.ts,
          text,
          message: { text, user: BOT_USER_ID, bot_id: BOT_ID, ...(message.blocks && { blocks: message.blocks }) },
        };
      }
      case 'chat.postEphemeral': {
        if (!p.channel) return { ok: false, error: 'channel_not_found' };
        if (!p.user) return { ok: false, error: 'user_not_in_channel' };
        const text = String(p.text ?? '');
        if (!text.trim() && !p.blocks) return { ok: false, error: 'no_text' };
        const message_ts = nextTs();
        ephemerals.push({ channel: String(p.channel), user: String(p.user), text, message_ts, ...(p.thread_ts && { thread_ts: String(p.thread_ts) }) });
        return { ok: true, message_ts };
      }
      case 'chat.delete': {
        const message = messages.find((m) => m.channel === p.channel && m.ts === p.ts && !m.deleted);
        if (!message) return { ok: false, error: 'message_not_found' };
        message.deleted = true;
        return { ok: true, channel: message.channel, ts: message.ts };
      }
      case 'reactions.add':
      case 'reactions.remove': {
        const key = `${p.channel}:${p.timestamp}`;
        const present = reactions.get(key) ?? [];
        const name = String(p.name);
        if (method === 'reactions.add') {
          if (present.includes(name)) return { ok: false, error: 'already_reacted' };
          reactions.set(key, [...present, name]);
        } else {
          if (!present.includes(name)) return { ok: false, error: 'no_reaction' };
          reactions.set(
            key,
            present.filter((r) => r !== name),
          );
        }
        reactionLog.set(key, [...(reactionLog.get(key) ?? []), `${method === 'reactions.add' ? '+' : '-'}${name}`]);
        return { ok: true };
      }
      case 'files.getUploadURLExternal': {
        const length = Number(p.length);
        if (!p.filename) return { ok: false, error: 'invalid_arguments' };
        // Slack: "Typically only occurs when the `length` provided is 0."
        if (!Number.isInteger(length) || length <= 0) return { ok: false, error: 'missing_argument' };
        const id = `F0UP${String(++uploadSeq).padStart(6, '0')}`;
        const ticket = `${TEAM_ID}-${id}-${Math.random().toString(36).slice(2, 10)}`;
        tickets.set(ticket, { id, filename: String(p.filename), length, completed: false });
        return { ok: true, upload_url: `${origin}/upload/v1/${ticket}`, file_id: id };
      }
      case 'files.completeUploadExternal':
        return completeUpload(p);
      case 'apps.connections.open':
        return { ok: true, url: `ws://127.0.0.1:${port}/link?ticket=fake` };
      default:
        return { ok: false, error: 'unknown_method' };
    }
  }

  /**
   * Slack's text streaming (docs.slack.dev/reference/methods/chat.startStream, .appendStream,
   * .stopStream): a stream is a reply in a thread; outside a DM it needs the recipient user and
   * team; each call's markdown_text is appended to the message (append-only) while the stream is
   * open; once stopped (or expired) appends and stops answer message_not_in_streaming_state.
   * The message's `text` is the streamed markdown as it arrived.
   */
  function handleStream(method: string, p: Record<string, any>): Record<string, unknown> {
    const text = p.markdown_text === undefined ? '' : String(p.markdown_text);
    // The docs give the 12,000 limit but no error name; msg_too_long is what Slack's chat methods answer for a long text.
    if (text.length > STREAM_TEXT_LIMIT) return { ok: false, error: 'msg_too_long' };
    if (method === 'chat.startStream') {
      if (!p.channel) return { ok: false, error: 'channel_not_found' };
      if (!String(p.channel).startsWith('D')) {
        if (!p.recipient_user_id) return { ok: false, error: 'missing_recipient_user_id' };
        if (!p.recipient_team_id) return { ok: false, error: 'missing_recipient_team_id' };
      }
      // A stream is a reply in a thread: thread_ts is required.
      if (!p.thread_ts) return { ok: false, error: 'invalid_arguments' };
      const { ts } = post(p, text, { stream: { streaming: true, chunks: text ? [text] : [] } });
      return { ok: true, channel: String(p.channel), ts };
    }
    const message = messages.find((m) => m.channel === p.channel && m.ts === p.ts && !m.deleted);
    if (!message) return { ok: false, error: 'message_not_found' };
    if (!message.stream?.streaming) return { ok: false, error: 'message_not_in_streaming_state' };
    if (method === 'chat.appendStream' && !text) return { ok: false, error: 'no_text' };
    if (text) {
      message.text += text;
      message.stream.chunks.push(text);
    }
    if (method === 'chat.appendStream') return { ok: true, channel: message.channel, ts: message.ts };
    message.stream.streaming = false;
    return {
      ok: true,
      channel: message.channel,
      ts: message.ts,
      message: { type: 'message', subtype: 'bot_message', text: message.text, bot_id: BOT_ID, ts: message.ts },
    };
  }

  /**
   * conversations.history (a conversation's top-level messages, newest first) and
   * conversations.replies (a thread, its parent first, given the ts of any message in it), as
   * Slack pages them: `limit` messages, `has_more` and `response_metadata.next_cursor` for the
   * rest; `oldest` / `latest` (exclusive unless `inclusive`) bound them. Metadata shows only with
   * include_all_metadata. Reading needs the conversation's history scope (when the fake was
   * given `scopes`): missing_scope names the one needed, as Slack does.
   */
  function listMessages(method: string, p: Record<string, any>): Record<string, unknown> {
    const channel = String(p.channel ?? '');
    if (!/^[CDG][A-Z0-9]+$/.test(channel)) return { ok: false, error: 'channel_not_found' };
    const needed = channel.startsWith('D') ? 'im:history' : channel.startsWith('G') ? 'groups:history' : 'channels:history';
    if (options.scopes && !options.scopes.includes(needed)) return { ok: false, error: 'missing_scope', needed, provided: options.scopes.join(',') };
    const all = [
      ...messages.filter((m) => !m.deleted).map((m) => ({ ts: m.ts, thread_ts: m.thread_ts, channel: m.channel, view: listedView(m, p) })),
      ...userMessages.map((m) => ({ ts: m.ts, thread_ts: m.thread_ts, channel: m.channel, view: userView(m) })),
    ].filter((m) => m.channel === channel);
    let listed: typeof all;
    if (method === 'conversations.replies') {
      if (!p.ts) return { ok: false, error: 'invalid_arguments' };
      const anchor = all.find((m) => m.ts === String(p.ts));
      if (!anchor) return { ok: false, error: 'thread_not_found' };
      const root = anchor.thread_ts ?? anchor.ts;
      listed = all.filter((m) => m.ts === root || m.thread_ts === root).sort((a, b) => compareTs(a.ts, b.ts));
      const parent = listed.findIndex((m) => m.ts === root);
      if (parent > 0) listed.unshift(...listed.splice(parent, 1));
    } else {
      listed = all.filter((m) => m.thread_ts === undefined || m.thread_ts === m.ts).sort((a, b) => compareTs(b.ts, a.ts));
    }
    const inclusive = p.inclusive === true || p.inclusive === 'true' || p.inclusive === '1';
    const within = (ts: string) =>
      (p.oldest === undefined || compareTs(ts, String(p.oldest)) > (inclusive ? -1 : 0)) &&
      (p.latest === undefined || compareTs(String(p.latest), ts) > (inclusive ? -1 : 0));
    listed = listed.filter((m) => within(m.ts));
    const limit = Math.min(Math.max(Number(p.limit ?? 100) || 100, 1), 999);
    const start = p.cursor ? Number(/^next_ts:(\d+)$/.exec(Buffer.from(String(p.cursor), 'base64').toString())?.[1] ?? Number.NaN) : 0;
    if (!Number.isInteger(start)) return { ok: false, error: 'invalid_cursor' };
    const page = listed.slice(start, start + limit);
    const hasMore = start + limit < listed.length;
    return {
      ok: true,
      messages: page.map((m) => m.view),
      has_more: hasMore,
      ...(method === 'conversations.history' && { pin_count: 0 }),
      response_metadata: { next_cursor: hasMore ? Buffer.from(`next_ts:${start + limit}`).toString('base64') : '' },
    };
  }

  /** files.completeUploadExternal: shares uploaded files, once each; one that never got its bytes is not found. */
  function completeUpload(p: Record<string, any>): Record<string, unknown> {
    let list: unknown;
    try {
      list = typeof p.files === 'string' ? JSON.parse(p.files) : p.files;
    } catch {
      return { ok: false, error: 'invalid_arguments' };
    }
    if (!Array.isArray(list) || list.length === 0 || list.some((f) => typeof f?.id !== 'string')) return { ok: false, error: 'invalid_arguments' };
    if (p.thread_ts && !p.channel_id) return { ok: false, error: 'invalid_arguments' };
    const entries = (list as { id: string; title?: string }[]).map((f) => ({ f, t: [...tickets.values()].find((t) => t.id === f.id) }));
    if (entries.some(({ t }) => !t || !t.bytes || t.completed)) return { ok: false, error: 'file_not_found' };
    for (const { f, t } of entries) {
      t!.completed = true;
      uploads.push({
        id: t!.id,
        filename: t!.filename,
        length: t!.length,
        bytes: t!.bytes!,
        ...(t!.partName !== undefined && { partName: t!.partName }),
        ...(f.title !== undefined && { title: String(f.title) }),
        ...(p.channel_id && { channel_id: String(p.channel_id) }),
        ...(p.thread_ts && { thread_ts: String(p.thread_ts) }),
        ...(p.initial_comment !== undefined && { initial_comment: String(p.initial_comment) }),
      });
    }
    return { ok: true, files: entries.map(({ f, t }) => ({ id: t!.id, title: f.title ?? t!.filename })) };
  }

  /**
   * The upload URL: takes the bytes raw or as multipart/form-data (the file in any part) and
   * answers 200 text/plain "OK - <bytes>", as Slack's file service does. Scripted failures:
   * a 429, a dropped connection (bytes kept), or `{ error }` as an HTTP 500 with that text.
   */
  async function serveUpload(req: IncomingMessage, res: ServerResponse, ticket: string): Promise<void> {
    const raw = await readBytes(req);
    const call: Call = {
      method: UPLOAD_URL,
      params: { ticket, bodyBytes: raw.byteLength },
      token: req.headers.authorization?.replace(/^Bearer /, ''),
      at: Date.now(),
      status: 200,
    };
    calls.push(call);
    const failure = failures.get(UPLOAD_URL)?.shift();
    const plain = (status: number, text: string, headers: Record<string, string> = {}) => {
      call.status = status;
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
      res.end(text);
    };
    if (failure && 'status' in failure) return plain(429, 'ratelimited', { 'retry-after': String(failure.retryAfter) });
    if (failure && 'error' in failure) {
      call.error = failure.error;
      return plain(500, failure.error);
    }
    const pending = tickets.get(ticket);
    if (!pending || pending.completed) {
      call.error = 'file_not_found';
      return plain(404, 'file_not_found');
    }
    const type = req.headers['content-type'] ?? '';
    if (type.startsWith('multipart/form-data')) {
      const form = await new Response(raw, { headers: { 'content-type': type } }).formData();
      const part = [...form.entries()].find(([, v]) => typeof v !== 'string');
      if (!part) return plain(400, 'no file in the form');
      pending.bytes = new Uint8Array(await (part[1] as File).arrayBuffer());
      pending.partName = part[0];
    } else {
      pending.bytes = new Uint8Array(raw);
    }
    call.params.bytes = pending.bytes.byteLength;
    if (failure && 'drop' in failure) {
      res.socket?.destroy();
      return;
    }
    plain(200, `OK - ${pending.bytes.byteLength}`);
  }

  function serveFile(req: IncomingMessage, res: ServerResponse, path: string): void {
    const authorization = req.headers.authorization;
    fileRequests.push({ path, authorization });
    const id = path.split('/')[2] ?? '';
    const entry = files.get(id);
    if (authorization !== `Bearer ${botToken}`) {
      // Slack's answer to a file request without a valid token (or without files:read): its sign-in page.
      const html = '<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Slack</body></html>';
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
      res.end(html);
      return;
    }
    if (!entry) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('file_not_found');
      return;
    }
    res.writeHead(200, { 'content-type': entry.file.mimetype, 'content-length': entry.bytes.byteLength });
    res.end(Buffer.from(entry.bytes));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  let fileSeq = 0;

  return {
    apiUrl: `${origin}/api/`,
    origin,
    calls,
    messages,
    ephemerals,
    reactions,
    reactionLog,
    fileRequests,
    uploads,
    fail(method, ...steps) {
      failures.set(method, [...(failures.get(method) ?? []), ...steps]);
    },
    holdResponses(fn) {
      hold = fn;
    },
    holdRequests(fn) {
      holdRequest = fn;
    },
    addMessage(channel, text, fields = {}) {
      const message: FakeUserMessage = {
        channel,
        ts: fields.ts ?? nextTs(),
        user: fields.user ?? 'U0ADA',
        text,
        ...(fields.thread_ts !== undefined && { thread_ts: fields.thread_ts }),
      };
      userMessages.push(message);
      return message;
    },
    addFile(name, bytes, mimetype) {
      const id = `F0FILE${++fileSeq}`;
      const url = `${origin}/files-pri/${TEAM_ID}-${id}/${encodeURIComponent(name)}`;
      const file: FakeFile = { id, name, mimetype, size: bytes.byteLength, url_private: url, url_private_download: `${url}?download=1` };
      files.set(`${TEAM_ID}-${id}`, { file, bytes });
      return file;
    },
    callsOf(method, all = false) {
      return calls.filter((c) => c.method === method && (all || (c.status === 200 && c.error === undefined)));
    },
    socket: {
      get connections() {
        return sockets.size;
      },
      send(payload, type = 'events_api', retryAttempt = 0) {
        const envelope_id = `env-${++envelopeSeq}`;
        const frame = {
          envelope_id,
          type,
          payload,
          accepts_response_payload: type !== 'events_api',
          retry_attempt: retryAttempt,
          retry_reason: retryAttempt ? 'timeout' : '',
        };
        for (const ws of sockets) ws.send(JSON.stringify(frame));
        return envelope_id;
      },
      acks,
      drop() {
        for (const ws of sockets) ws.terminate();
      },
    },
    expireStreams() {
      for (const m of messages) if (m.stream) m.stream.streaming = false;
    },
    async close() {
      for (const release of held) release();
      held.clear();
      for (const ws of sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

/** A message as Slack shows it in an API answer or an interaction payload. */
export function messageView(m: FakeMessage): Record<string, unknown> {
  return {
    type: 'message',
    text: m.text,
    user: BOT_USER_ID,
    bot_id: BOT_ID,
    ts: m.ts,
    ...(m.thread_ts && { thread_ts: m.thread_ts }),
    ...(m.blocks && { blocks: m.blocks }),
  };
}

/** A bot message in a conversations.history / replies answer: with its metadata only when asked for it. */
function listedView(m: FakeMessage, p: Record<string, any>): Record<string, unknown> {
  const withMetadata = p.include_all_metadata === true || p.include_all_metadata === 'true' || p.include_all_metadata === '1';
  return { ...messageView(m), app_id: 'A0FAKE', ...(withMetadata && m.metadata && { metadata: m.metadata }) };
}

function userView(m: FakeUserMessage): Record<string, unknown> {
  return { type: 'message', text: m.text, user: m.user, ts: m.ts, ...(m.thread_ts && { thread_ts: m.thread_ts }) };
}

/** Slack timestamps (`seconds.micro`) in time order, exactly (as numbers they would lose the microseconds). */
function compareTs(a: string, b: string): number {
  const key = (ts: string) => {
    const [s = '0', u = ''] = ts.split('.');
    return BigInt(s) * 1_000_000n + BigInt(u.padEnd(6, '0').slice(0, 6) || '0');
  };
  const d = key(a) - key(b);
  return d === 0n ? 0 : d > 0n ? 1 : -1;
}

/**
 * chat.postMessage's `metadata` (an object in a JSON body, a JSON string in a form one): its
 * event metadata, undefined when there is none, or Slack's error for a malformed one.
 */
function parseMetadata(raw: unknown): FakeMessage['metadata'] | 'invalid_metadata_format' | 'invalid_metadata_schema' {
  if (raw === undefined || raw === '') return undefined;
  let value: unknown;
  try {
    value = typeof raw === 'string' ? JSON.parse(raw) : raw;
  } catch {
    return 'invalid_metadata_format';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'invalid_metadata_format';
  const { event_type, event_payload } = value as Record<string, unknown>;
  if (typeof event_type !== 'string' || !event_type || typeof event_payload !== 'object' || event_payload === null || Array.isArray(event_payload))
    return 'invalid_metadata_schema';
  return { event_type, event_payload: event_payload as Record<string, unknown> };
}

/** Slack's limits on the blocks this project sends (https://docs.slack.dev/reference/block-kit/blocks). */
const BLOCK_LIMITS = { blocks: 50, sectionText: 3_000, contextElements: 10, actionsElements: 25, buttonText: 75, actionId: 255, value: 2_000, blockId: 255 };

/** `blocks` as sent (a JSON string in a form body, an array in a JSON one); 'invalid' where Slack answers invalid_blocks. */
function parseBlocks(raw: unknown): Record<string, any>[] | undefined | 'invalid' {
  if (raw === undefined || raw === '') return undefined;
  let blocks: unknown;
  try {
    blocks = typeof raw === 'string' ? JSON.parse(raw) : raw;
  } catch {
    return 'invalid';
  }
  if (!Array.isArray(blocks) || blocks.length > BLOCK_LIMITS.blocks) return 'invalid';
  const textOk = (t: any, max: number, types = ['mrkdwn', 'plain_text']) =>
    t && types.includes(t.type) && typeof t.text === 'string' && t.text.length > 0 && t.text.length <= max;
  const ok = blocks.every((b: any) => {
    if (b?.block_id !== undefined && (typeof b.block_id !== 'string' || b.block_id.length > BLOCK_LIMITS.blockId)) return false;
    switch (b?.type) {
      case 'section':
        return textOk(b.text, BLOCK_LIMITS.sectionText);
      case 'context':
        return (
          Array.isArray(b.elements) &&
          b.elements.length > 0 &&
          b.elements.length <= BLOCK_LIMITS.contextElements &&
          b.elements.every((e: any) => textOk(e, BLOCK_LIMITS.sectionText))
        );
      case 'actions':
        return (
          Array.isArray(b.elements) &&
          b.elements.length > 0 &&
          b.elements.length <= BLOCK_LIMITS.actionsElements &&
          b.elements.every(
            (e: any) =>
              e.type === 'button' &&
              textOk(e.text, BLOCK_LIMITS.buttonText, ['plain_text']) &&
              typeof e.action_id === 'string' &&
              e.action_id.length <= BLOCK_LIMITS.actionId &&
              (e.value === undefined || (typeof e.value === 'string' && e.value.length <= BLOCK_LIMITS.value)) &&
              (e.style === undefined || e.style === 'primary' || e.style === 'danger'),
          )
        );
      default:
        return false;
    }
  });
  return ok ? (blocks as Record<string, any>[]) : 'invalid';
}

function parseBody(raw: string, contentType: string): Record<string, any> {
  if (!raw) return {};
  if (contentType.includes('application/json')) return JSON.parse(raw) as Record<string, any>;
  return Object.fromEntries(new URLSearchParams(raw));
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
