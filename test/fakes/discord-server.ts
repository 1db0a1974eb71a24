import { clientGoneAfter } from './hold.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { buffer as readBody } from 'node:stream/consumers';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  componentsError,
  dmChannel,
  formError,
  guildCreate,
  member,
  pingsOf,
  role,
  snowflake,
  textChannel,
  threadChannel,
  user,
  type AllowedMentions,
  type UserObject,
} from './discord-payloads.js';

/**
 * An in-process fake of Discord on 127.0.0.1 for driving the real discord.js client and our
 * REST adapter: REST under /api/v10 (gateway info, command registration, interaction callbacks,
 * interaction webhooks (the response and follow-ups: create, get, edit, delete), channel messages with message components and uploaded files, typing,
 * attachment downloads) and a JSON gateway WebSocket (HELLO, IDENTIFY, READY, GUILD_CREATE,
 * heartbeats, RESUME with replay, dispatches: messages, slash commands, button presses). Answers use Discord's payload shapes
 * and error bodies; every REST request is recorded.
 */

export const BOT_TOKEN = 'fake-bot-token.not-secret';
const LOADING = 1 << 7;
const EPHEMERAL = 1 << 6;
/** Discord makes no link embeds for a message with this flag. */
const SUPPRESS_EMBEDS = 1 << 2;
/** A component interaction must be answered within 3 s, or Discord forgets it (10062 Unknown interaction). */
const COMPONENT_DEADLINE_MS = 3_000;
const MESSAGE_CONTENT_INTENT = 1 << 15;
/** Discord's default per-file upload limit (10 MiB since January 2025) and its request limit (25 MiB). */
export const UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;
const REQUEST_LIMIT_BYTES = 25 * 1024 * 1024;
const PRIVILEGED_INTENTS = (1 << 1) | (1 << 8) | MESSAGE_CONTENT_INTENT;

export interface RecordedRequest {
  seq: number;
  method: string;
  /** The path after /api/v10, without the query. */
  path: string;
  query: URLSearchParams;
  /** The JSON body; for multipart/form-data, the parsed `payload_json` part. */
  body: any;
  /** The file parts of a multipart/form-data request, in order. */
  files: RecordedFile[];
  auth: string | undefined;
  status: number;
  at: number;
  /** Held before it took effect (holdRequests), and its client was gone by then: it never took effect. */
  dropped?: true;
}

export interface RecordedFile {
  /** The form field: `files[0]`, `files[1]`… */
  field: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

/** An uploaded file as the message carries it: Discord's attachment object plus the bytes received. */
export interface FakeAttachment {
  id: string;
  filename: string;
  description?: string;
  size: number;
  url: string;
  proxy_url: string;
  content_type: string;
  bytes: Buffer;
}

export interface FakeMessage {
  id: string;
  channel_id: string;
  author: UserObject;
  content: string;
  flags: number;
  /**
   * Its SUPPRESS_EMBEDS flag as it stands (kept apart from `flags`): set by the flags it was made
   * with, set or unset by an edit that carries `flags` ("only SUPPRESS_EMBEDS can be set/unset").
   * Without it Discord fetches every link in the content for an embed.
   */
  embedsSuppressed: boolean;
  /** Every content it had, first to last. */
  history: string[];
  pings: string[];
  nonce?: string;
  /** Its message components (action rows of buttons) as last set; [] for none. */
  components: any[];
  /** Files uploaded with it. */
  attachments: FakeAttachment[];
  /** Every button custom_id it has carried, so a test can press one a stale client still shows. */
  shownCustomIds: string[];
  message_reference?: { message_id: string; channel_id?: string };
  /** How it was made: a channel message, an interaction's response, a follow-up, or a user's message sent through the gateway. */
  via: 'channel' | 'original' | 'followup' | 'user';
  interactionId?: string;
  deleted: boolean;
  createdAt: number;
}

export interface FakeInteraction {
  id: string;
  token: string;
  /** A slash command (type 2, APPLICATION_COMMAND) or a button press (type 3, MESSAGE_COMPONENT). */
  kind: 'command' | 'component';
  /** The command's name; for a press, its custom_id. */
  name: string;
  channelId: string;
  userId: string;
  /** A press: the message whose button it was, and the button's custom_id. */
  messageId?: string;
  customId?: string;
  createdAt: number;
  /** 5 = deferred, 4 = replied; for a press also 6 = deferred update, 7 = message updated. Undefined until the callback. */
  callbackType?: number;
  callbackFlags?: number;
  callbackContent?: string;
  /** The callback's `data` as sent. */
  callbackData?: any;
  callbackAt?: number;
  originalId?: string;
  followups: string[];
  expired: boolean;
}

export interface Failure {
  method: string;
  path: RegExp;
  status: number;
  /** Seconds, for a 429. */
  retryAfter?: number;
  body?: unknown;
  /** Do the request's work, then answer with the failure (a response lost after the write). */
  afterWork?: boolean;
  times?: number;
  /** Only requests this accepts meet the failure (e.g. an edit with a given content); others pass. */
  when?: (req: RecordedRequest) => boolean;
}

export interface FakeDiscordOptions {
  /** Whether the application has the privileged Message Content intent enabled in the portal. */
  messageContentAllowed?: boolean;
  heartbeatIntervalMs?: number;
  /** READY waits for releaseReady(). */
  holdReady?: boolean;
  /** The bot token it accepts (BOT_TOKEN unless a test brings its own). */
  token?: string;
  /** `flags` of GET /applications/@me (default: GATEWAY_MESSAGE_CONTENT unless messageContentAllowed is false). */
  applicationFlags?: number;
  /**
   * Discord's documented, deprecated behaviour: a follow-up sent while the deferred response
   * still shows "is thinking…" edits that response instead of making a message (and ignores the
   * ephemeral flag). Off unless a test asks, because the adapter's text follow-ups do not allow
   * for it yet: a failure line sent right after the deferral would become the response (not
   * ephemeral) and be deleted with it. Uploads do allow for it.
   */
  followupEditsDeferred?: boolean;
}

type Route = { method: string; re: RegExp; auth: boolean; handle: (m: RegExpExecArray, req: RecordedRequest) => Reply | Promise<Reply> };
type Parsed = { body: any; files: RecordedFile[] } | Reply;
type Reply = { status: number; body?: unknown; raw?: Buffer; headers?: Record<string, string> };

export type FakeDiscord = Awaited<ReturnType<typeof startFakeDiscord>>;

export async function startFakeDiscord(options: FakeDiscordOptions = {}) {
  const botToken = options.token ?? BOT_TOKEN;
  const ids = {
    app: snowflake(),
    guild: snowflake(),
    general: snowflake(),
    random: snowflake(),
    thread: snowflake(),
    botRole: snowflake(),
    alice: snowflake(),
    bob: snowflake(),
    otherBot: snowflake(),
    dmAlice: snowflake(),
  };
  const bot = user(ids.app, 'switchboard', { bot: true });
  const users = new Map<string, UserObject>([
    [ids.app, bot],
    [ids.alice, user(ids.alice, 'alice', { globalName: 'Alice' })],
    [ids.bob, user(ids.bob, 'bob')],
    [ids.otherBot, user(ids.otherBot, 'otherbot', { bot: true })],
  ]);
  const channels = new Map<string, { type: number; guild?: boolean }>([
    [ids.general, { type: 0, guild: true }],
    [ids.random, { type: 0, guild: true }],
    [ids.thread, { type: 11, guild: true }],
    [ids.dmAlice, { type: 1 }],
  ]);
  const requests: RecordedRequest[] = [];
  const messages: FakeMessage[] = [];
  const interactions = new Map<string, FakeInteraction>();
  const attachments = new Map<string, Buffer>();
  /** Files the bot uploaded, by attachment id (their URLs serve them). */
  const uploaded = new Map<string, Buffer>();
  const commands = { global: [] as any[], guild: new Map<string, any[]>() };
  const failures: Failure[] = [];
  let seq = 0;
  // Opt-in: ms to hold a REST request before it takes effect, or its response after it did (to stop a client in between).
  let holdRequest: ((req: RecordedRequest) => number) | undefined;
  let holdResponse: ((req: RecordedRequest) => number) | undefined;

  // ---------------------------------------------------------------- gateway state
  const gateway = {
    identifies: [] as any[],
    resumes: [] as any[],
    heartbeats: 0,
    connections: 0,
    sessionId: '',
    seq: 0,
    log: [] as { s: number; t: string; d: unknown }[],
    active: undefined as WebSocket | undefined,
    holdReady: options.holdReady ?? false,
    pendingReady: undefined as WebSocket | undefined,
    holdHello: false,
    pendingHello: [] as WebSocket[],
  };
  const heartbeatInterval = options.heartbeatIntervalMs ?? 1_000;

  const server = createServer((req, res) => {
    void serve(req, res).catch((err: unknown) => send(res, { status: 500, body: { message: `fake-discord crashed: ${String(err)}`, code: 0 } }));
  });
  const wss = new WebSocketServer({ server });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const wsBase = base.replace('http', 'ws');

  // ---------------------------------------------------------------- REST
  const err = (status: number, message: string, code = 0): Reply => ({ status, body: { message, code } });
  const notFound = () => err(404, '404: Not Found');
  const channelOf = (id: string) => channels.get(id);
  const live = (id: string) => messages.find((m) => m.id === id && !m.deleted);

  function messageObject(m: FakeMessage) {
    const ch = channelOf(m.channel_id);
    return {
      id: m.id,
      type: m.message_reference ? 19 : 0,
      channel_id: m.channel_id,
      ...(ch?.guild && { guild_id: ids.guild }),
      author: m.author,
      content: m.content,
      timestamp: new Date(m.createdAt).toISOString(),
      edited_timestamp: m.history.length > 1 ? new Date().toISOString() : null,
      tts: false,
      mention_everyone: m.pings.includes('everyone'),
      mentions: m.pings
        .filter((p) => p.startsWith('user:'))
        .map((p) => users.get(p.slice(5)))
        .filter(Boolean),
      mention_roles: m.pings.filter((p) => p.startsWith('role:')).map((p) => p.slice(5)),
      attachments: m.attachments.map(({ bytes: _bytes, ...a }) => a),
      embeds: [],
      pinned: false,
      flags: m.flags | (m.embedsSuppressed ? SUPPRESS_EMBEDS : 0),
      components: m.components,
      ...(m.nonce !== undefined && { nonce: m.nonce }),
      ...(m.message_reference && {
        message_reference: { type: 0, message_id: m.message_reference.message_id, channel_id: m.channel_id, ...(ch?.guild && { guild_id: ids.guild }) },
      }),
      ...(m.via === 'original' || m.via === 'followup' ? { webhook_id: ids.app, application_id: ids.app } : {}),
    };
  }

  /** Validates and builds a bot message; returns an error reply when Discord would refuse it. */
  function newMessage(channelId: string, body: any, via: FakeMessage['via'], flags = 0, files: RecordedFile[] = []): FakeMessage | Reply {
    const content = typeof body?.content === 'string' ? body.content : '';
    if (content.length > 2000) return { status: 400, body: formError('content', 'BASE_TYPE_MAX_LENGTH', 'Must be 2000 or fewer in length.') };
    const components = body?.components ?? [];
    const badComponents = componentsError(components);
    if (badComponents) return { status: 400, body: badComponents };
    if (files.some((f) => f.bytes.length > UPLOAD_LIMIT_BYTES)) return err(413, 'Request entity too large', 40005);
    const attached = attachmentsOf(channelId, body, files);
    if (!content.trim() && components.length === 0 && attached.length === 0 && !(flags & LOADING)) return err(400, 'Cannot send an empty message', 50006);
    const allowed = body?.allowed_mentions as AllowedMentions | undefined;
    if (allowed?.parse?.includes('users') && allowed.users) {
      return {
        status: 400,
        body: formError('allowed_mentions', 'MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE', 'parse:["users"] and users: [ids...] are mutually exclusive.'),
      };
    }
    let repliedAuthor: string | undefined;
    let reference: FakeMessage['message_reference'];
    if (body?.message_reference?.message_id) {
      const target = live(body.message_reference.message_id);
      if (!target && body.message_reference.fail_if_not_exists !== false)
        return { status: 400, body: formError('message_reference', 'REPLIES_UNKNOWN_MESSAGE', 'Unknown message') };
      if (target) {
        reference = { message_id: target.id, channel_id: channelId };
        repliedAuthor = target.author.id;
      }
    }
    const m: FakeMessage = {
      id: snowflake(),
      channel_id: channelId,
      author: bot,
      content,
      flags,
      embedsSuppressed: (Number(body?.flags ?? 0) & SUPPRESS_EMBEDS) !== 0,
      history: [content],
      pings: pingsOf(content, allowed, repliedAuthor),
      components: structuredClone(components),
      shownCustomIds: customIdsOf(components),
      attachments: attached,
      via,
      deleted: false,
      createdAt: Date.now(),
      ...(reference && { message_reference: reference }),
      ...(typeof body?.nonce === 'string' && { nonce: body.nonce }),
    };
    return m;
  }

  /**
   * The attachment objects Discord makes of a message's `files[n]` parts: each named by its
   * `attachments` entry with `id: n` (filename, description) or else by the part's own filename.
   */
  function attachmentsOf(channelId: string, body: any, files: RecordedFile[]): FakeAttachment[] {
    const meta: any[] = Array.isArray(body?.attachments) ? body.attachments : [];
    return files.flatMap((f) => {
      const n = /^files\[(\d+)\]$/.exec(f.field)?.[1];
      if (n === undefined) return [];
      const entry = meta.find((a) => String(a?.id) === n);
      const filename = typeof entry?.filename === 'string' ? entry.filename : f.filename;
      const id = snowflake();
      const url = `${base}/attachments/${channelId}/${id}/${encodeURIComponent(filename)}?ex=6700&is=6600&hm=fake`;
      uploaded.set(id, f.bytes);
      return [
        {
          id,
          filename,
          ...(typeof entry?.description === 'string' && { description: entry.description }),
          size: f.bytes.length,
          url,
          proxy_url: url.replace(base, `${base}/media`),
          content_type: f.contentType || 'application/octet-stream',
          bytes: f.bytes,
        },
      ];
    });
  }

  function editMessage(m: FakeMessage, body: any): Reply | undefined {
    if (body?.components !== undefined) {
      const bad = componentsError(body.components);
      if (bad) return { status: 400, body: bad };
    }
    if (typeof body?.content === 'string' && body.content.length > 2000)
      return { status: 400, body: formError('content', 'BASE_TYPE_MAX_LENGTH', 'Must be 2000 or fewer in length.') };
    // `components: []` removes them; absent leaves them as they are.
    if (body?.components !== undefined) {
      m.components = structuredClone(body.components);
      for (const id of customIdsOf(body.components)) if (!m.shownCustomIds.includes(id)) m.shownCustomIds.push(id);
    }
    if (typeof body?.content === 'string') {
      m.content = body.content;
      m.history.push(body.content);
      m.pings = pingsOf(body.content, body.allowed_mentions, undefined);
    }
    if (body?.flags !== undefined && body.flags !== null) m.embedsSuppressed = (Number(body.flags) & SUPPRESS_EMBEDS) !== 0;
    m.flags &= ~LOADING;
    return undefined;
  }

  function webhookInteraction(app: string, token: string): FakeInteraction | Reply {
    if (app !== ids.app) return err(404, 'Unknown Webhook', 10015);
    const ix = [...interactions.values()].find((i) => i.token === token);
    if (!ix) return err(404, 'Unknown Webhook', 10015);
    if (ix.expired) return err(401, 'Invalid Webhook Token', 50027);
    return ix;
  }

  const routes: Route[] = [
    {
      method: 'GET',
      re: /^\/gateway\/bot$/,
      auth: true,
      handle: () => ({
        status: 200,
        body: { url: `${wsBase}/gateway`, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 } },
      }),
    },
    { method: 'GET', re: /^\/users\/@me$/, auth: true, handle: () => ({ status: 200, body: { ...bot, verified: true, mfa_enabled: false, locale: 'en-US' } }) },
    {
      // The application's flags carry GATEWAY_MESSAGE_CONTENT (1 << 18) when the portal's Message Content Intent is on.
      method: 'GET',
      re: /^\/applications\/@me$/,
      auth: true,
      handle: () => ({
        status: 200,
        body: {
          id: ids.app,
          name: 'switchboard',
          description: '',
          bot_public: true,
          bot_require_code_grant: false,
          bot: { ...bot },
          verify_key: 'fake',
          flags: options.applicationFlags ?? (options.messageContentAllowed === false ? 0 : 1 << 18),
        },
      }),
    },
    ...(['GET', 'PUT'] as const).map(
      (method): Route => ({
        method,
        re: /^\/applications\/(\d+)(?:\/guilds\/(\d+))?\/commands$/,
        auth: true,
        handle: (m, req) => {
          if (m[1] !== ids.app) return err(403, 'Missing Access', 50001);
          if (m[2] !== undefined && m[2] !== ids.guild) return err(403, 'Missing Access', 50001);
          const list = () => (m[2] ? (commands.guild.get(m[2]) ?? []) : commands.global);
          if (method === 'GET') return { status: 200, body: list() };
          if (!Array.isArray(req.body)) return { status: 400, body: formError('_errors', 'BASE_TYPE_ARRAY', 'Must be an array') };
          const saved = req.body.map((c: any) => ({
            id: list().find((old: any) => old.name === c.name)?.id ?? snowflake(),
            application_id: ids.app,
            version: snowflake(),
            default_member_permissions: null,
            type: 1,
            nsfw: false,
            ...(m[2] && { guild_id: m[2] }),
            ...c,
            options: (c.options ?? []).map((o: any) => ({ ...o })),
          }));
          if (m[2]) commands.guild.set(m[2], saved);
          else commands.global = saved;
          return { status: 200, body: saved };
        },
      }),
    ),
    {
      method: 'POST',
      re: /^\/interactions\/(\d+)\/([^/]+)\/callback$/,
      auth: false,
      handle: (m, req) => {
        const ix = interactions.get(m[1]!);
        if (!ix || ix.token !== m[2] || ix.expired) return err(404, 'Unknown interaction', 10062);
        if (ix.kind === 'component' && Date.now() - ix.createdAt > COMPONENT_DEADLINE_MS) return err(404, 'Unknown interaction', 10062);
        if (ix.callbackType !== undefined) return err(400, 'Interaction has already been acknowledged.', 40060);
        const type = req.body?.type;
        const flags = Number(req.body?.data?.flags ?? 0);
        // UPDATE_MESSAGE (7) and DEFERRED_UPDATE_MESSAGE (6) answer only a component interaction: they act on its message.
        const allowed = ix.kind === 'component' ? [4, 5, 6, 7] : [4, 5];
        if (!allowed.includes(type)) return { status: 400, body: formError('type', 'BASE_TYPE_CHOICES', `Value must be one of (${allowed.join(', ')}).`) };
        if (type === 6 || type === 7) {
          const target = ix.messageId ? live(ix.messageId) : undefined;
          if (!target) return err(404, 'Unknown Message', 10008);
          if (type === 7) {
            const bad = editMessage(target, req.body?.data ?? {});
            if (bad) return bad;
          }
          Object.assign(ix, {
            callbackType: type,
            callbackFlags: flags,
            callbackAt: Date.now(),
            callbackData: req.body?.data,
            ...(typeof req.body?.data?.content === 'string' && { callbackContent: req.body.data.content }),
          });
          if (req.query.get('with_response') === 'true') {
            return {
              status: 200,
              body: {
                interaction: {
                  id: ix.id,
                  type: 3,
                  activity_instance_id: null,
                  response_message_id: target.id,
                  response_message_loading: false,
                  response_message_ephemeral: false,
                },
                resource: { type, message: messageObject(target) },
              },
            };
          }
          return { status: 204 };
        }
        const made = newMessage(ix.channelId, type === 4 ? req.body.data : {}, 'original', (type === 5 ? LOADING : 0) | (flags & EPHEMERAL));
        if (!('id' in made)) return made;
        made.interactionId = ix.id;
        messages.push(made);
        Object.assign(ix, {
          callbackType: type,
          callbackFlags: flags,
          callbackAt: Date.now(),
          callbackData: req.body?.data,
          originalId: made.id,
          ...(type === 4 && { callbackContent: made.content }),
        });
        if (req.query.get('with_response') === 'true') {
          return {
            status: 200,
            body: {
              interaction: {
                id: ix.id,
                type: ix.kind === 'component' ? 3 : 2,
                activity_instance_id: null,
                response_message_id: made.id,
                response_message_loading: type === 5,
                response_message_ephemeral: (flags & EPHEMERAL) !== 0,
              },
              resource: { type, message: messageObject(made) },
            },
          };
        }
        return { status: 204 };
      },
    },
    {
      method: 'PATCH',
      re: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/@original$/,
      auth: false,
      handle: (m, req) => {
        const ix = webhookInteraction(m[1]!, m[2]!);
        if (!('token' in ix)) return ix;
        const original = ix.originalId ? live(ix.originalId) : undefined;
        if (!original) return err(404, 'Unknown Message', 10008);
        const bad = editMessage(original, req.body);
        return bad ?? { status: 200, body: messageObject(original) };
      },
    },
    {
      method: 'GET',
      re: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/@original$/,
      auth: false,
      handle: (m) => {
        const ix = webhookInteraction(m[1]!, m[2]!);
        if (!('token' in ix)) return ix;
        const original = ix.originalId ? live(ix.originalId) : undefined;
        return original ? { status: 200, body: messageObject(original) } : err(404, 'Unknown Message', 10008);
      },
    },
    {
      method: 'DELETE',
      re: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/@original$/,
      auth: false,
      handle: (m) => {
        const ix = webhookInteraction(m[1]!, m[2]!);
        if (!('token' in ix)) return ix;
        const original = ix.originalId ? live(ix.originalId) : undefined;
        if (!original) return err(404, 'Unknown Message', 10008);
        original.deleted = true;
        return { status: 204 };
      },
    },
    ...(['GET', 'PATCH', 'DELETE'] as const).map(
      (method): Route => ({
        // Get / Edit / Delete Followup Message: only a message of this interaction (its response or a follow-up); anything else is 404 Unknown Message.
        method,
        re: /^\/webhooks\/(\d+)\/([^/]+)\/messages\/(\d+)$/,
        auth: false,
        handle: (m, req) => {
          const ix = webhookInteraction(m[1]!, m[2]!);
          if (!('token' in ix)) return ix;
          const target = live(m[3]!);
          if (!target || target.interactionId !== ix.id) return err(404, 'Unknown Message', 10008);
          if (method === 'DELETE') {
            target.deleted = true;
            return { status: 204 };
          }
          const bad = method === 'PATCH' ? editMessage(target, req.body) : undefined;
          return bad ?? { status: 200, body: messageObject(target) };
        },
      }),
    ),
    {
      method: 'POST',
      re: /^\/webhooks\/(\d+)\/([^/]+)$/,
      auth: false,
      handle: (m, req) => {
        const ix = webhookInteraction(m[1]!, m[2]!);
        if (!('token' in ix)) return ix;
        if (ix.callbackType === undefined) return err(404, 'Unknown Webhook', 10015);
        const loading = ix.originalId ? live(ix.originalId) : undefined;
        if (options.followupEditsDeferred && loading && loading.flags & LOADING) return editDeferred(loading, req);
        const made = newMessage(ix.channelId, req.body, 'followup', Number(req.body?.flags ?? 0) & EPHEMERAL, req.files);
        if (!('id' in made)) return made;
        made.interactionId = ix.id;
        messages.push(made);
        ix.followups.push(made.id);
        return { status: 200, body: messageObject(made) };
      },
    },
    {
      method: 'POST',
      re: /^\/channels\/(\d+)\/messages$/,
      auth: true,
      handle: (m, req) => {
        if (!channelOf(m[1]!)) return err(404, 'Unknown Channel', 10003);
        // enforce_nonce: a message of ours with this nonce made in the last few minutes is returned, not made again.
        if (req.body?.enforce_nonce === true && typeof req.body.nonce === 'string') {
          const same = messages.find((x) => x.nonce === req.body.nonce && x.channel_id === m[1] && Date.now() - x.createdAt < 5 * 60_000);
          if (same) return { status: 200, body: messageObject(same) };
        }
        const made = newMessage(m[1]!, req.body, 'channel', 0, req.files);
        if (!('id' in made)) return made;
        messages.push(made);
        return { status: 200, body: messageObject(made) };
      },
    },
    {
      method: 'PATCH',
      re: /^\/channels\/(\d+)\/messages\/(\d+)$/,
      auth: true,
      handle: (m, req) => {
        const target = live(m[2]!);
        // An ephemeral interaction message exists only for its user: the channel's endpoints do not know it.
        if (!target || target.channel_id !== m[1] || target.flags & EPHEMERAL) return err(404, 'Unknown Message', 10008);
        if (target.author.id !== ids.app) return err(403, 'Cannot edit a message authored by another user', 50005);
        const bad = editMessage(target, req.body);
        return bad ?? { status: 200, body: messageObject(target) };
      },
    },
    {
      method: 'DELETE',
      re: /^\/channels\/(\d+)\/messages\/(\d+)$/,
      auth: true,
      handle: (m) => {
        const target = live(m[2]!);
        if (!target || target.channel_id !== m[1] || target.flags & EPHEMERAL) return err(404, 'Unknown Message', 10008);
        target.deleted = true;
        return { status: 204 };
      },
    },
    {
      method: 'POST',
      re: /^\/channels\/(\d+)\/typing$/,
      auth: true,
      handle: (m) => (channelOf(m[1]!) ? { status: 204 } : err(404, 'Unknown Channel', 10003)),
    },
  ];

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', base);
    const file = /^(?:\/media)?\/attachments\/\d+\/(\d+)\/(.+)$/.exec(url.pathname);
    if (req.method === 'GET' && file) {
      const bytes = uploaded.get(file[1]!) ?? attachments.get(decodeURIComponent(file[2]!));
      return send(
        res,
        bytes ? { status: 200, raw: bytes, headers: { 'content-type': 'application/octet-stream' } } : { status: 404, raw: Buffer.from('Not Found') },
      );
    }
    const raw = await readBody(req);
    if (raw.length > REQUEST_LIMIT_BYTES) return send(res, err(413, 'Request entity too large', 40005));
    const parsed = await parseBody(raw, req.headers['content-type']);
    if (!('files' in parsed)) return send(res, parsed);
    const path = decodeURIComponent(url.pathname.replace(/^\/api\/v10/, ''));
    const recorded: RecordedRequest = {
      seq: ++seq,
      method: req.method ?? 'GET',
      path,
      query: url.searchParams,
      body: parsed.body,
      files: parsed.files,
      auth: req.headers.authorization,
      status: 0,
      at: Date.now(),
    };
    requests.push(recorded);
    if (await clientGoneAfter(holdRequest?.(recorded) ?? 0, req)) {
      recorded.dropped = true;
      return;
    }
    const reply = await route(recorded, url.pathname.startsWith('/api/v10/'));
    recorded.status = reply.status;
    const after = holdResponse?.(recorded) ?? 0;
    if (after > 0) await new Promise((r) => setTimeout(r, after));
    if (res.destroyed) return;
    send(res, reply);
  }

  /** A JSON body, or Discord's multipart form: `payload_json` (or plain fields) and `files[n]` parts. */
  async function parseBody(raw: Buffer, contentType: string | undefined): Promise<Parsed> {
    if (!contentType?.startsWith('multipart/form-data')) {
      try {
        return { body: raw.length ? JSON.parse(raw.toString('utf8')) : undefined, files: [] };
      } catch {
        return err(400, '400: Bad Request', 50109);
      }
    }
    let form: FormData;
    try {
      form = await new Response(new Uint8Array(raw), { headers: { 'content-type': contentType } }).formData();
    } catch {
      return err(400, 'Invalid Form Body', 50035);
    }
    const files: RecordedFile[] = [];
    const fields: Record<string, string> = {};
    for (const [field, value] of form.entries()) {
      if (typeof value === 'string') fields[field] = value;
      else files.push({ field, filename: value.name, contentType: value.type, bytes: Buffer.from(await value.arrayBuffer()) });
    }
    if (fields.payload_json === undefined) return { body: fields, files };
    try {
      return { body: JSON.parse(fields.payload_json), files };
    } catch {
      return err(400, '400: Bad Request', 50109);
    }
  }

  /** The deprecated path of a follow-up to a still-loading deferred response: it becomes that response. */
  function editDeferred(original: FakeMessage, req: RecordedRequest): Reply {
    if (req.files.some((f) => f.bytes.length > UPLOAD_LIMIT_BYTES)) return err(413, 'Request entity too large', 40005);
    const bad = editMessage(original, req.body);
    if (bad) return bad;
    const more = attachmentsOf(original.channel_id, req.body, req.files);
    original.attachments.push(...more);
    return { status: 200, body: messageObject(original) };
  }

  async function route(req: RecordedRequest, versioned: boolean): Promise<Reply> {
    if (!versioned) return notFound();
    for (const r of routes) {
      if (r.method !== req.method) continue;
      const m = r.re.exec(req.path);
      if (!m) continue;
      if (r.auth && req.auth !== `Bot ${botToken}`) return err(401, '401: Unauthorized');
      const failure = failures.find((f) => f.method === req.method && f.path.test(req.path) && (f.when?.(req) ?? true));
      if (failure && !failure.afterWork) return consume(failure);
      const reply = await r.handle(m, req);
      if (failure?.afterWork) return consume(failure);
      return reply;
    }
    return notFound();
  }

  function consume(f: Failure): Reply {
    f.times = (f.times ?? 1) - 1;
    if (f.times <= 0) failures.splice(failures.indexOf(f), 1);
    if (f.status === 429) {
      const after = f.retryAfter ?? 1;
      return {
        status: 429,
        body: f.body ?? { message: 'You are being rate limited.', retry_after: after, global: false },
        headers: { 'retry-after': String(Math.ceil(after)), 'x-ratelimit-scope': 'user' },
      };
    }
    return { status: f.status, body: f.body ?? { message: f.status >= 500 ? '500: Internal Server Error' : `HTTP ${f.status}`, code: 0 } };
  }

  // ---------------------------------------------------------------- gateway
  const sendOp = (ws: WebSocket, payload: object) => ws.send(JSON.stringify({ s: null, t: null, ...payload }));

  function hello(ws: WebSocket) {
    sendOp(ws, { op: 10, d: { heartbeat_interval: heartbeatInterval, _trace: ['["fake-gateway",{"micros":0}]'] } });
  }

  function ready(ws: WebSocket) {
    gateway.sessionId = snowflake();
    gateway.seq = 0;
    gateway.log = [];
    gateway.active = ws;
    dispatch('READY', {
      v: 10,
      user_settings: {},
      user: { ...bot, verified: true, mfa_enabled: false },
      guilds: [{ id: ids.guild, unavailable: true }],
      session_id: gateway.sessionId,
      session_type: 'normal',
      resume_gateway_url: `${wsBase}/resume`,
      shard: [0, 1],
      application: { id: ids.app, flags: 0 },
      private_channels: [],
      presences: [],
      relationships: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: ['fake'],
      auth: {},
      _trace: ['["fake-gateway",{"micros":0}]'],
    });
    const botMember = member(bot, [ids.botRole]);
    dispatch(
      'GUILD_CREATE',
      guildCreate({
        id: ids.guild,
        name: 'Switchboard test guild',
        ownerId: ids.alice,
        roles: [role(ids.guild, '@everyone', 0, '2248473465835073'), role(ids.botRole, 'switchboard', 1, '274878008320', ids.app)],
        channels: [textChannel(ids.general, 'general', 0), textChannel(ids.random, 'random', 1)],
        threads: [threadChannel(ids.thread, ids.guild, ids.general, ids.alice, 'a thread')],
        members: [botMember, member(users.get(ids.alice))],
      }),
    );
  }

  function dispatch(t: string, d: unknown): number {
    const s = ++gateway.seq;
    gateway.log.push({ s, t, d });
    if (gateway.active?.readyState === 1) gateway.active.send(JSON.stringify({ op: 0, s, t, d }));
    return s;
  }

  wss.on('connection', (ws, req) => {
    gateway.connections++;
    const q = new URL(req.url ?? '/', base).searchParams;
    if (q.get('v') !== '10' || q.get('encoding') !== 'json' || q.has('compress')) {
      ws.close(4012, 'Invalid API version');
      return;
    }
    ws.on('message', (data) => {
      let p: any;
      try {
        p = JSON.parse(String(data));
      } catch {
        ws.close(4002, 'Error while decoding payload.');
        return;
      }
      switch (p.op) {
        case 1:
          gateway.heartbeats++;
          sendOp(ws, { op: 11 });
          break;
        case 2: {
          gateway.identifies.push(p.d);
          if (p.d?.token !== botToken) return ws.close(4004, 'Authentication failed.');
          const intents = Number(p.d.intents);
          if (!Number.isInteger(intents) || intents < 0) return ws.close(4013, 'Invalid intent(s).');
          if (intents & PRIVILEGED_INTENTS & MESSAGE_CONTENT_INTENT && options.messageContentAllowed === false) return ws.close(4014, 'Disallowed intent(s).');
          if (gateway.holdReady) gateway.pendingReady = ws;
          else ready(ws);
          break;
        }
        case 6: {
          gateway.resumes.push(p.d);
          if (p.d?.token !== botToken) return ws.close(4004, 'Authentication failed.');
          if (p.d.session_id !== gateway.sessionId) return sendOp(ws, { op: 9, d: false });
          gateway.active = ws;
          for (const e of gateway.log.filter((x) => x.s > Number(p.d.seq))) ws.send(JSON.stringify({ op: 0, ...e }));
          dispatch('RESUMED', { _trace: ['["fake-gateway",{"micros":0}]'] });
          break;
        }
        default:
          break;
      }
    });
    ws.on('close', () => {
      if (gateway.active === ws) gateway.active = undefined;
    });
    if (gateway.holdHello) gateway.pendingHello.push(ws);
    else hello(ws);
  });

  // ---------------------------------------------------------------- what tests drive
  const commandIds: Record<string, string> = {};

  /** A new interaction in a channel, by a user, and the fields every INTERACTION_CREATE carries. */
  function newInteraction(kind: FakeInteraction['kind'], name: string, channelId: string, userId?: string) {
    const u = users.get(userId ?? ids.alice);
    if (!u) throw new Error(`fake-discord: no user ${userId}`);
    const ch = channelOf(channelId);
    if (!ch) throw new Error(`fake-discord: no channel ${channelId}`);
    const id = snowflake();
    // Real tokens are base64 of "interaction:<id>:<secret>".
    const token = Buffer.from(`interaction:${id}:${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`).toString('base64url');
    const ix: FakeInteraction = { id, token, kind, name, channelId, userId: u.id, createdAt: Date.now(), followups: [], expired: false };
    interactions.set(id, ix);
    const channel =
      ch.type === 1
        ? dmChannel(channelId, u)
        : ch.type === 11
          ? { ...threadChannel(channelId, ids.guild, ids.general, ids.alice, 'a thread'), permissions: '2248473465835073' }
          : { ...textChannel(channelId, channelId === ids.random ? 'random' : 'general'), guild_id: ids.guild, permissions: '2248473465835073' };
    const envelope = {
      id,
      application_id: ids.app,
      ...(ch.guild
        ? { guild_id: ids.guild, guild: { id: ids.guild, locale: 'en-US', features: [] }, member: { ...member(u, [], '2248473465835073') } }
        : { user: u }),
      channel,
      channel_id: channelId,
      token,
      version: 1,
      app_permissions: '274878008320',
      locale: 'en-US',
      ...(ch.guild && { guild_locale: 'en-US' }),
      entitlements: [],
      authorizing_integration_owners: ch.guild ? { '0': ids.guild } : { '0': u.id },
      context: ch.guild ? 0 : 1,
      attachment_size_limit: 10_485_760,
    };
    return { ix, envelope };
  }

  return {
    ids,
    token: botToken,
    /** DISCORD_API_URL: the REST base discord.js calls `rest.api`. */
    apiUrl: `${base}/api`,
    base,
    requests,
    messages,
    interactions,
    commands,
    gateway,
    env(extra: Record<string, string> = {}): Record<string, string> {
      return { DISCORD_TOKEN: botToken, DISCORD_APPLICATION_ID: ids.app, DISCORD_API_URL: `${base}/api`, ...extra };
    },
    /** Requests matching method and path (a RegExp on the path after /api/v10). */
    calls(method: string, path: RegExp): RecordedRequest[] {
      return requests.filter((r) => r.method === method && path.test(r.path));
    },
    /** Live messages the bot posted in a channel through the API, oldest first (interaction responses and follow-ups included). */
    botMessages(channelId: string): FakeMessage[] {
      return messages.filter((m) => m.channel_id === channelId && m.author.id === ids.app && m.via !== 'user' && !m.deleted);
    },
    fail(f: Failure): void {
      failures.push(f);
    },
    /** `hold(req)` ms to wait before a REST request takes effect; one whose client is gone by then never does (`dropped`). `undefined` removes it. */
    holdRequests(hold: ((req: RecordedRequest) => number) | undefined): void {
      holdRequest = hold;
    },
    /** `hold(req)` ms to wait before answering a REST request that has taken effect. `undefined` removes it. */
    holdResponses(hold: ((req: RecordedRequest) => number) | undefined): void {
      holdResponse = hold;
    },
    addAttachment(name: string, bytes: Buffer) {
      attachments.set(name, bytes);
      const id = snowflake();
      const url = `${base}/attachments/${ids.general}/${id}/${encodeURIComponent(name)}?ex=6700&is=6600&hm=fake`;
      return { id, filename: name, size: bytes.length, url, proxy_url: url, content_type: 'text/plain; charset=utf-8' };
    },

    /** A user's message through the gateway (MESSAGE_CREATE). Mentions are read from `<@id>` in the content. */
    userMessage(o: { channel: string; author?: string; content: string; replyTo?: string; attachments?: unknown[] }): FakeMessage {
      const author = users.get(o.author ?? ids.alice)!;
      const ch = channelOf(o.channel);
      if (!ch) throw new Error(`fake-discord: no channel ${o.channel}`);
      const target = o.replyTo ? live(o.replyTo) : undefined;
      const mentioned = [...o.content.matchAll(/<@!?(\d+)>/g)].map((x) => users.get(x[1]!)).filter((u): u is UserObject => !!u);
      if (target && !mentioned.some((u) => u.id === target.author.id)) mentioned.push(target.author);
      const m: FakeMessage = {
        id: snowflake(),
        channel_id: o.channel,
        author,
        content: o.content,
        flags: 0,
        embedsSuppressed: false,
        history: [o.content],
        pings: [],
        components: [],
        shownCustomIds: [],
        attachments: [],
        via: 'user',
        deleted: false,
        createdAt: Date.now(),
        ...(target && { message_reference: { message_id: target.id, channel_id: o.channel } }),
      };
      messages.push(m);
      const contentAllowed = options.messageContentAllowed !== false && gateway.identifies.some((i) => (Number(i.intents) & MESSAGE_CONTENT_INTENT) !== 0);
      // Without the Message Content intent Discord blanks content (and attachments) unless the bot is mentioned or it is a DM.
      const visible = contentAllowed || !ch.guild || mentioned.some((u) => u.id === ids.app);
      dispatch('MESSAGE_CREATE', {
        ...messageObject(m),
        content: visible ? o.content : '',
        attachments: visible ? (o.attachments ?? []) : [],
        mentions: mentioned.map((u) => ({ ...u, ...(ch.guild && { member: member(undefined, []) }) })),
        mention_roles: [...o.content.matchAll(/<@&(\d+)>/g)].map((x) => x[1]),
        mention_everyone: /@everyone|@here/.test(o.content),
        channel_type: ch.type,
        ...(ch.guild && { member: member(undefined, []) }),
        ...(target && { referenced_message: messageObject(target) }),
      });
      return m;
    },

    /** A slash command through the gateway (INTERACTION_CREATE, type 2 APPLICATION_COMMAND). */
    slash(o: { name: string; channel: string; user?: string; prompt?: string }): FakeInteraction {
      const { ix, envelope } = newInteraction('command', o.name, o.channel, o.user);
      const ch = channelOf(o.channel)!;
      const registered = [...commands.global, ...(commands.guild.get(ids.guild) ?? [])].find((c: any) => c.name === o.name);
      commandIds[o.name] ??= registered?.id ?? snowflake();
      dispatch('INTERACTION_CREATE', {
        ...envelope,
        type: 2,
        data: {
          id: commandIds[o.name],
          name: o.name,
          type: 1,
          ...(o.prompt !== undefined && { options: [{ name: 'prompt', type: 3, value: o.prompt }] }),
          ...(ch.guild && { guild_id: ids.guild }),
        },
      });
      return ix;
    },

    /**
     * A press of a button on one of the bot's messages (INTERACTION_CREATE, type 3
     * MESSAGE_COMPONENT, `data: { custom_id, component_type: 2 }`, with the message as Discord
     * has it now). The button must be one the message shows, or showed (a client that has not yet
     * seen an update can still press it). Answer within 3 s or the callback gets 10062.
     */
    press(o: { message: FakeMessage; customId: string; user?: string }): FakeInteraction {
      const target = live(o.message.id);
      if (!target || target.author.id !== ids.app) throw new Error(`fake-discord: no message of the bot ${o.message.id}`);
      if (!target.shownCustomIds.includes(o.customId)) throw new Error(`fake-discord: message ${target.id} never had a button ${o.customId}`);
      const { ix, envelope } = newInteraction('component', o.customId, target.channel_id, o.user);
      Object.assign(ix, { messageId: target.id, customId: o.customId });
      dispatch('INTERACTION_CREATE', {
        ...envelope,
        type: 3,
        data: { custom_id: o.customId, component_type: 2 },
        message: messageObject(target),
      });
      return ix;
    },

    /** Buttons (type 2) of a message, in order, from its action rows. */
    buttons(message: FakeMessage): { label?: string; style: number; custom_id?: string; disabled?: boolean }[] {
      return message.components.flatMap((row: any) => (row.components ?? []).filter((c: any) => c.type === 2));
    },

    /** From now on the interaction's token is refused: 401 Invalid Webhook Token, like one past its 15 minutes. */
    expire(interactionId: string): void {
      const ix = interactions.get(interactionId);
      if (!ix) throw new Error(`fake-discord: no interaction ${interactionId}`);
      ix.expired = true;
    },
    releaseReady(): void {
      gateway.holdReady = false;
      if (gateway.pendingReady) ready(gateway.pendingReady);
      gateway.pendingReady = undefined;
    },
    /** Closes the client's connection (it resumes); with `hold`, new connections get no HELLO until releaseHello(). */
    drop(code = 4000, hold = false): void {
      gateway.holdHello = hold;
      gateway.active?.close(code, 'fake-discord drop');
    },
    releaseHello(): void {
      gateway.holdHello = false;
      for (const ws of gateway.pendingHello.splice(0)) if (ws.readyState === 1) hello(ws);
    },
    async close(): Promise<void> {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The custom_ids of the buttons in a message's action rows. */
function customIdsOf(components: any[]): string[] {
  return components
    .flatMap((row: any) => (Array.isArray(row?.components) ? row.components : []))
    .flatMap((c: any) => (typeof c?.custom_id === 'string' ? [c.custom_id] : []));
}

function send(res: ServerResponse, reply: Reply): void {
  const headers: Record<string, string> = {
    'x-ratelimit-limit': '5',
    'x-ratelimit-remaining': '4',
    'x-ratelimit-reset': String(Date.now() / 1000 + 1),
    'x-ratelimit-reset-after': '1',
    'x-ratelimit-bucket': 'fakebucket',
    ...reply.headers,
  };
  if (reply.raw) {
    res.writeHead(reply.status, { ...headers, 'content-length': reply.raw.length });
    res.end(reply.raw);
    return;
  }
  if (reply.body === undefined) {
    res.writeHead(reply.status, headers);
    res.end();
    return;
  }
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
