// A streamed answer (STREAM_ANSWERS=1, the default): how long from the model's first token to the
// first words the person sees, on Telegram, Slack and Discord. Each platform runs the real gateway
// and worker roles in this process (test/helpers/stack.ts) against real Redis, its fake platform
// server from the tests and the fake model, which streams one scripted answer per message in
// timed chunks. Between the worker and the fake model sits a tap (below) that notes when the
// first content chunk and the chunk that takes the text past STREAM_MIN_CHARS went through; the
// fake platform notes when each write arrived. Both clocks are Date.now() of this process.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { STREAM_INTERVAL_MS as DISCORD_GAP_MS } from '../src/channels/discord/pacing.js';
import { sessionKeyOf } from '../src/channels/session-key.js';
import { STREAM_INTERVAL_MS as SLACK_GAP_MS } from '../src/channels/slack/writer.js';
import { PRIVATE_CHAT_GAP_MS } from '../src/channels/telegram/writer.js';
import { STREAM_MIN_CHARS } from '../src/run/delivery/answer-stream.js';
import { startFakeDiscord } from '../test/fakes/discord-server.js';
import { BOT_TOKEN as SLACK_BOT_TOKEN, startFakeSlack, TEAM_ID } from '../test/fakes/slack-server.js';
import { startFakeTelegram, TOKEN as TELEGRAM_TOKEN } from '../test/fakes/telegram-server.js';
import { appMention, eventCallback, nextTs, postEvent, SIGNING_SECRET } from '../test/channels/slack/helpers.js';
import { waitFor } from '../test/helpers/processes.js';
import { readyz, startStack, type Stack } from '../test/helpers/stack.js';
import { percentile } from './stats.js';

export type Platform = 'telegram' | 'slack' | 'discord';
export const PLATFORMS: readonly Platform[] = ['telegram', 'slack', 'discord'];

/** How the fake model streams each answer: this many chunks, this far apart (a model writing at about 270 characters a second). */
export const CHUNKS = 10;
export const CHUNK_GAP_MS = 150;

/** One answer's clock: model-side times from the tap, the first visible write from the fake platform. */
interface Sample {
  /** First token → first visible words. */
  firstWordsMs: number;
  /** First token → the text passes STREAM_MIN_CHARS (the model's part: nothing can be shown before). */
  thresholdMs: number;
  /** Threshold → first visible words (the adapter's own delay: the stream's schedule, the pacer, the write's way there). */
  adapterMs: number;
  /** The method (or HTTP method) of that first visible write. */
  via: string;
}

const round = (v: number) => Math.round(v * 10) / 10;
const summary = (xs: number[]) => ({ p50Ms: round(percentile(xs, 50)), maxMs: round(Math.max(...xs)) });

export interface PlatformStreamLatency {
  n: number;
  /** The pacing gap between two writes to one conversation (the stream's interval). */
  gapMs: number;
  /** How the first visible words were written (e.g. sendMessage, chat.postMessage, POST). */
  firstWrite: string[];
  firstWords: { p50Ms: number; maxMs: number };
  threshold: { p50Ms: number; maxMs: number };
  adapter: { p50Ms: number; maxMs: number };
}

export interface StreamLatency {
  answerChars: number;
  chunks: number;
  chunkGapMs: number;
  thresholdChars: number;
  telegram: PlatformStreamLatency;
  slack: PlatformStreamLatency;
  discord: PlatformStreamLatency;
}

/** The scripted answer of message `i` on `platform`: plain prose (no Markdown, nothing any platform escapes), about 400 characters. */
function answerOf(platform: Platform, i: number): { text: string; firstWords: string } {
  const firstWords = `Streamed answer ${i} on ${platform}:`;
  const sentences = [firstWords];
  for (let k = 1; sentences.join(' ').length < 400; k++) sentences.push(`sentence ${k} of the answer the model writes a few words at a time.`);
  return { text: sentences.join(' '), firstWords };
}

// ---------------------------------------------------------------- the model-side clock

interface TapRecord {
  /** The request's last user message (what a sample is matched by). */
  user: string;
  /** Date.now() when the first content chunk went through to the worker. */
  firstAt?: number;
  /** …and when the chunk that took the text to STREAM_MIN_CHARS (trimmed, as the stream counts it) did. */
  thresholdAt?: number;
}

/**
 * A pass-through HTTP proxy in front of the fake model: the worker's OPENAI_BASE_URL points here,
 * every request goes on to `upstream` unchanged and every response comes back unchanged, chunk by
 * chunk; for a streamed chat completion it notes when content chunks passed. (The fake model
 * itself records only when a request arrived.)
 */
async function startModelTap() {
  const records: TapRecord[] = [];
  let upstream: URL | undefined;
  const server = createServer((req, res) => void forward(req, res));

  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (!upstream) {
      res.writeHead(503).end('the tap has no upstream yet');
      return;
    }
    let record: TapRecord | undefined;
    if (req.method === 'POST' && req.url?.endsWith('/chat/completions')) {
      try {
        const parsed = JSON.parse(body.toString('utf8')) as { stream?: boolean; messages?: { role: string; content: unknown }[] };
        if (parsed.stream === true) {
          const user = [...(parsed.messages ?? [])].reverse().find((m) => m.role === 'user');
          record = { user: String(user?.content ?? '') };
          records.push(record);
        }
      } catch {
        /* not JSON: forwarded as is */
      }
    }
    const { 'transfer-encoding': _chunked, ...headers } = req.headers;
    const out = request(
      new URL(req.url ?? '/', upstream),
      { method: req.method, headers: { ...headers, host: upstream.host, 'content-length': String(body.length) } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        let pending = '';
        let text = '';
        answer.on('data', (chunk: Buffer) => {
          if (record) {
            const now = Date.now();
            pending += chunk.toString('utf8');
            const events = pending.split('\n\n');
            pending = events.pop() ?? '';
            for (const event of events) {
              const data = event.startsWith('data: ') ? event.slice(6) : '';
              if (!data || data === '[DONE]') continue;
              try {
                const piece = (JSON.parse(data) as { choices?: { delta?: { content?: string | null } }[] }).choices?.[0]?.delta?.content;
                if (!piece) continue;
                text += piece;
                record.firstAt ??= now;
                if (record.thresholdAt === undefined && text.trim().length >= STREAM_MIN_CHARS) record.thresholdAt = now;
              } catch {
                /* not a JSON event */
              }
            }
          }
          res.write(chunk);
        });
        answer.on('end', () => res.end());
        answer.on('error', () => res.destroy());
      },
    );
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    out.end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    records,
    setUpstream(baseURL: string) {
      upstream = new URL(baseURL.endsWith('/') ? baseURL : `${baseURL}/`);
    },
    /** The tap's record of the streamed request that carried `user`. */
    recordOf(user: string): TapRecord | undefined {
      return records.find((r) => r.user.includes(user));
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
type ModelTap = Awaited<ReturnType<typeof startModelTap>>;

// ---------------------------------------------------------------- the platforms

/** A write the fake platform received: when it arrived, what it was, whether it took effect, the text it shows. */
interface Write {
  at: number;
  via: string;
  ok: boolean;
  text: string;
}

/** One platform's rig: the stack and its fake, how to ask, what it received, when a turn is over. */
interface PlatformRig {
  stack: Stack;
  gapMs: number;
  /** The conversation message `i` goes to. */
  conversation(i: number): string;
  /** Sends a message there (its answer is scripted already). */
  ask(conversation: string, text: string): Promise<void>;
  /** The writes of answer text the fake received in a conversation, in order. */
  writes(conversation: string): Write[];
  /** When the conversation was last written (posts, edits, deletes), for a rig that reuses conversations. */
  lastWriteAt?(conversation: string): number | undefined;
  /** The run started by the last ask in `conversation` committed and its reply was delivered. */
  ended(conversation: string): Promise<boolean>;
  close(): Promise<void>;
}

async function telegramRig(env: Record<string, string>): Promise<PlatformRig> {
  const tg = await startFakeTelegram();
  let stack: Stack;
  try {
    stack = await startStack('bench-stream-tg', { ...env, TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_API_ROOT: tg.apiRoot });
  } catch (err) {
    await tg.close();
    throw err;
  }
  const rig: PlatformRig = {
    stack,
    gapMs: PRIVATE_CHAT_GAP_MS,
    // A DM from a new user each time: a chat of its own, whose pacer starts free.
    conversation: (i) => String(7_100_000 + i),
    async ask(conversation, text) {
      const chat = Number(conversation);
      const from = { id: chat, is_bot: false, first_name: `Reader ${chat}` };
      tg.pushUpdate({ message: tg.message({ chat: { id: chat, type: 'private' }, from, text }) });
    },
    writes(conversation) {
      return tg.calls
        .filter((c) => String(c.body?.chat_id) === conversation && ['sendMessage', 'editMessageText', 'sendMessageDraft'].includes(c.method))
        .map((c) => ({ at: c.at, via: c.method, ok: c.error === undefined && c.dropped === undefined, text: String(c.body?.text ?? '') }));
    },
    async ended(conversation) {
      const session = sessionKeyOf({ platform: 'telegram', conversation });
      return (await stack.redis.get(stack.keys.last(session))) !== null && (await stack.redis.exists(stack.keys.outbox(session))) === 0;
    },
    close: closeBoth(stack, tg),
  };
  return whenReady(rig, 'the telegram channel to connect', () => stack.gateway.channels.find((c) => c.name === 'telegram')?.health().connected === true);
}

async function slackRig(env: Record<string, string>): Promise<PlatformRig> {
  const slack = await startFakeSlack();
  let stack: Stack;
  try {
    // LINK_PREVIEWS stays at its default (off): the answer streams by chat.postMessage and
    // chat.update (native chat.startStream streams need LINK_PREVIEWS=1, see slack/stream.ts).
    stack = await startStack('bench-stream-slack', {
      ...env,
      SLACK_BOT_TOKEN: SLACK_BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
    });
  } catch (err) {
    await slack.close();
    throw err;
  }
  const threads = new Map<string, string>();
  const rig: PlatformRig = {
    stack,
    gapMs: SLACK_GAP_MS,
    // A mention in a channel of its own (the pacer is per conversation), starting a thread.
    conversation: (i) => `C0BENCHSTREAM${i}`,
    async ask(channel, text) {
      const ts = nextTs();
      threads.set(channel, ts);
      const res = await postEvent(stack.baseUrl, eventCallback(appMention(channel, ts, text, { team: TEAM_ID, user_team: TEAM_ID })));
      if (res.status !== 200) throw new Error(`the gateway answered the Slack event ${res.status}`);
    },
    writes(conversation) {
      return slack.calls
        .filter((c) => c.params.channel === conversation && ['chat.postMessage', 'chat.update', 'chat.startStream', 'chat.appendStream'].includes(c.method))
        .map((c) => ({
          at: c.at,
          via: c.method,
          ok: c.status === 200 && c.error === undefined && c.dropped === undefined,
          text: String(c.params.text ?? c.params.markdown_text ?? ''),
        }));
    },
    async ended(conversation) {
      const session = sessionKeyOf({ platform: 'slack', conversation, thread: threads.get(conversation) });
      return (await stack.redis.get(stack.keys.last(session))) !== null && (await stack.redis.exists(stack.keys.outbox(session))) === 0;
    },
    close: closeBoth(stack, slack),
  };
  return whenReady(rig, 'slack identity', async () => (await (await readyz(stack)).json()).channels?.slack?.connected === true);
}

async function discordRig(env: Record<string, string>): Promise<PlatformRig> {
  const fake = await startFakeDiscord();
  let stack: Stack;
  try {
    stack = await startStack('bench-stream-dc', fake.env(env));
  } catch (err) {
    await fake.close();
    throw err;
  }
  // The fake has a fixed set of channels: mentions take turns in its two text channels and its
  // thread, and `measure` waits until the channel's last write is a pacing gap old before asking.
  const channels = [fake.ids.general, fake.ids.random, fake.ids.thread];
  const lastBefore = new Map<string, string | null>();
  const session = (channel: string) => sessionKeyOf({ platform: 'discord', conversation: channel });
  const rig: PlatformRig = {
    stack,
    gapMs: DISCORD_GAP_MS,
    conversation: (i) => channels[i % channels.length]!,
    async ask(channel, text) {
      lastBefore.set(channel, await stack.redis.get(stack.keys.last(session(channel))));
      fake.userMessage({ channel, content: `<@${fake.ids.app}> ${text}` });
    },
    writes(conversation) {
      const post = `/channels/${conversation}/messages`;
      return fake.requests
        .filter((r) => (r.method === 'POST' && r.path === post) || (r.method === 'PATCH' && r.path.startsWith(`${post}/`)))
        .map((r) => ({ at: r.at, via: r.method, ok: r.status === 200 && r.dropped === undefined, text: String(r.body?.content ?? '') }));
    },
    lastWriteAt(conversation) {
      const messages = `/channels/${conversation}/messages`;
      return fake.requests.filter((r) => r.method !== 'GET' && (r.path === messages || r.path.startsWith(`${messages}/`))).at(-1)?.at;
    },
    async ended(conversation) {
      const last = await stack.redis.get(stack.keys.last(session(conversation)));
      return last !== null && last !== lastBefore.get(conversation) && (await stack.redis.exists(stack.keys.outbox(session(conversation)))) === 0;
    },
    close: closeBoth(stack, fake),
  };
  return whenReady(rig, 'the Discord gateway to be ready', () => stack.gateway.channels.find((c) => c.name === 'discord')?.health().connected === true);
}

/** A rig's close: the stack, then its fake platform, even when the stack fails to stop. */
function closeBoth(stack: Stack, fake: { close(): Promise<void> }): () => Promise<void> {
  return async () => {
    try {
      await stack.close();
    } finally {
      await fake.close();
    }
  };
}

/** The rig once its channel is ready; closed, and the error thrown, if it never gets there. */
async function whenReady(rig: PlatformRig, what: string, ready: () => boolean | Promise<boolean>): Promise<PlatformRig> {
  try {
    await waitFor(what, ready, 15_000);
  } catch (err) {
    await rig.close();
    throw err;
  }
  return rig;
}

const RIGS: Record<Platform, (env: Record<string, string>) => Promise<PlatformRig>> = { telegram: telegramRig, slack: slackRig, discord: discordRig };

/** Waits until the conversation's last write is a pacing gap old (only the Discord rig reuses conversations). */
async function pacerFree(rig: PlatformRig, conversation: string): Promise<void> {
  const last = rig.lastWriteAt?.(conversation);
  if (last !== undefined) await sleep(Math.max(0, last + rig.gapMs + 100 - Date.now()));
}

async function measurePlatform(platform: Platform, n: number, env: Record<string, string>, tap: ModelTap): Promise<PlatformStreamLatency> {
  const rig = await RIGS[platform]({ ...env, OPENAI_BASE_URL: tap.baseURL });
  try {
    tap.setUpstream(rig.stack.fake.baseURL);
    const samples: Sample[] = [];
    for (let i = 0; i < n; i++) {
      const { text, firstWords } = answerOf(platform, i);
      const question = `bench stream ${platform} ${i}: write a long answer`;
      rig.stack.fake.script([{ content: text, chunks: CHUNKS, chunkDelayMs: CHUNK_GAP_MS }]);
      const conversation = rig.conversation(i);
      await pacerFree(rig, conversation);
      await rig.ask(conversation, question);
      let shown: Write | undefined;
      await waitFor(
        `the first visible words of answer ${i} on ${platform}`,
        () => (shown = rig.writes(conversation).find((w) => w.ok && w.text.includes(firstWords))) !== undefined,
        30_000,
        2,
      );
      await waitFor(`answer ${i} on ${platform} to be delivered`, () => rig.ended(conversation), 30_000, 20);
      const record = tap.recordOf(question);
      if (record?.firstAt === undefined || record.thresholdAt === undefined)
        throw new Error(`the model tap saw no streamed answer for ${platform} message ${i} (${tap.records.length} streamed requests)`);
      samples.push({
        firstWordsMs: shown!.at - record.firstAt,
        thresholdMs: record.thresholdAt - record.firstAt,
        adapterMs: shown!.at - record.thresholdAt,
        via: shown!.via,
      });
    }
    return {
      n: samples.length,
      gapMs: rig.gapMs,
      firstWrite: [...new Set(samples.map((s) => s.via))],
      firstWords: summary(samples.map((s) => s.firstWordsMs)),
      threshold: summary(samples.map((s) => s.thresholdMs)),
      adapter: summary(samples.map((s) => s.adapterMs)),
    };
  } finally {
    await rig.close();
  }
}

/**
 * `n` streamed answers per platform, each to a new message (a new conversation where the
 * platform's fake has one to give); `envFor(platform)` brings REDIS_URL and the key prefix.
 */
export async function measureStreamLatency(n: number, envFor: (platform: Platform) => Record<string, string>): Promise<StreamLatency> {
  const tap = await startModelTap();
  try {
    const out: Partial<Record<Platform, PlatformStreamLatency>> = {};
    for (const platform of PLATFORMS) out[platform] = await measurePlatform(platform, n, envFor(platform), tap);
    return {
      answerChars: answerOf('telegram', 0).text.length,
      chunks: CHUNKS,
      chunkGapMs: CHUNK_GAP_MS,
      thresholdChars: STREAM_MIN_CHARS,
      telegram: out.telegram!,
      slack: out.slack!,
      discord: out.discord!,
    };
  } finally {
    await tap.close();
  }
}
