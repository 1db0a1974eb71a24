import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPEAT_NUDGE } from '../../src/agent/loop.js';
import type { ChatMessage } from '../../src/agent/types.js';
import { PLACEHOLDER } from '../../src/channels/kit/pieces.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { entryId, type MemoryEntry } from '../../src/memory/entry.js';
import { MemoryStore } from '../../src/memory/store.js';
import type { LastRun } from '../../src/queue/job-data.js';
import { RedisKeys } from '../../src/queue/keys.js';
import { parseJournal, type JournalEntry } from '../../src/session/journal.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest, type ReplyStep } from '../fakes/openai-server.js';
import { startFakeTelegram, TOKEN, type FakeTelegram } from '../fakes/telegram-server.js';
import { spawnNode, spawnWorker, waitFor, type Spawned } from '../helpers/processes.js';
import { productEnv } from '../helpers/product-env.js';
import { dropPrefix, REDIS_URL, testRedis, uniquePrefix } from '../helpers/redis.js';

/**
 * "SIGKILL of the worker between remember's write and its result: one entry." The worker that is
 * killed talks to Redis through a proxy of the test's (RedisTap below), which stops it at one exact
 * Redis command: the command is let through, and from then on nothing more the worker sends reaches
 * Redis (or nothing Redis answers reaches the worker). Then it is SIGKILLed and a second worker,
 * straight on Redis, takes the turn over from the journal:
 *
 * - stopped right after remember's entry was written, before its result was journaled (the worker
 *   had the result and was sending it: that write is held at the proxy): the resumed run reads
 *   "interrupted", the model remembers again, and the same text is the entry already there;
 * - stopped right after the result was journaled (the worker never heard back): the resumed run
 *   replays the recorded result.
 *
 * Either way: one entry, one answer, a completed run. The rig is KillRig's (test/helpers/kill-rig.ts:
 * one gateway, one worker at a time, a dead worker's run back in about 3 s) with the kill point
 * moved from a platform call to a Redis command, and a model that calls tools.
 */

const FACT = 'Build server is atlas-7';
const INTERRUPTED = 'Error: interrupted: the run was interrupted while remember was running';

type ToolEnd = Extract<JournalEntry, { t: 'tool_end' }>;
type ToolStart = Extract<JournalEntry, { t: 'tool_start' }>;

const messagesOf = (req: RecordedRequest) => req.body.messages as ChatMessage[];
const lastOf = (req: RecordedRequest) => messagesOf(req).at(-1)!;
const rememberCall = (): ReplyStep => ({ content: null, toolCalls: [{ name: 'remember', arguments: JSON.stringify({ text: FACT }) }] });

/** The name of the tool whose result the request's last message is (undefined when it is not a tool result). */
function resultFor(req: RecordedRequest): string | undefined {
  const last = lastOf(req);
  if (last.role !== 'tool') return undefined;
  for (const m of messagesOf(req))
    if (m.role === 'assistant') for (const c of m.tool_calls ?? []) if (c.id === last.tool_call_id && c.type === 'function') return c.function.name;
  return undefined;
}

/** The model: remember the fact; after an interrupted remember, remember it again; after its result, "Noted.". */
function script(req: RecordedRequest): ReplyStep {
  const last = lastOf(req);
  // The loop drops an exact repeat of the previous call and nudges once (src/agent/loop.ts): the model insists on the retry.
  if (last.role === 'user' && last.content === REPEAT_NUDGE) return rememberCall();
  if (last.role === 'user') return rememberCall();
  if (resultFor(req) === 'remember') return String(last.content).startsWith(INTERRUPTED) ? rememberCall() : { content: 'Noted.' };
  return { content: `unscripted request: ${JSON.stringify(last).slice(0, 200)}` };
}

/** One RESP command a client sent: its bytes and its arguments (the command name first). */
interface Command {
  raw: Buffer;
  args: string[];
}

/** The next whole command at the start of `buf` (ioredis sends arrays of bulk strings), or undefined until it has all come. */
function parseCommand(buf: Buffer): { end: number; args: string[] } | undefined {
  const line = (from: number) => {
    const i = buf.indexOf('\r\n', from);
    return i < 0 ? undefined : { text: buf.toString('latin1', from, i), next: i + 2 };
  };
  const head = line(0);
  if (!head) return undefined;
  if (!head.text.startsWith('*')) throw new Error(`RedisTap: not a RESP array: ${head.text.slice(0, 40)}`);
  const args: string[] = [];
  let at = head.next;
  for (let n = Number(head.text.slice(1)); n > 0; n--) {
    const len = line(at);
    if (!len) return undefined;
    const size = Number(len.text.slice(1));
    if (buf.length < len.next + size + 2) return undefined;
    args.push(buf.toString('utf8', len.next, len.next + size));
    at = len.next + size + 2;
  }
  return { end: at, args };
}

/**
 * A TCP proxy in front of Redis for one worker process. Armed with a predicate, it forwards the
 * first whole command that matches and then, on every connection, holds either what the worker
 * sends after it (`commands`: it never reaches Redis) or what Redis sends back (`replies`: the
 * worker never hears it). What is held is dropped with the connection.
 */
class RedisTap {
  private armed?: { match: (args: string[]) => boolean; hold: 'commands' | 'replies' };
  private holding?: 'commands' | 'replies';
  /** Commands the worker sent after the strike, which never reached Redis. */
  readonly held: string[][] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(upstream: string): Promise<RedisTap> {
    const target = new URL(upstream);
    let tap: RedisTap | undefined;
    const server = createServer((client) => tap!.pipe(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = new URL(upstream);
    url.hostname = '127.0.0.1';
    url.port = String((server.address() as { port: number }).port);
    tap = new RedisTap(server, url.toString());
    return tap;
  }

  get struck(): boolean {
    return this.holding !== undefined;
  }

  arm(hold: 'commands' | 'replies', match: (args: string[]) => boolean): void {
    this.armed = { match, hold };
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket, target: URL): void {
    const redis = connect({ host: target.hostname, port: Number(target.port || 6379) });
    this.sockets.add(client).add(redis);
    const end = () => {
      client.destroy();
      redis.destroy();
      this.sockets.delete(client);
      this.sockets.delete(redis);
    };
    client.on('error', end).on('close', end);
    redis.on('error', end).on('close', end);
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (let parsed = parseCommand(pending); parsed; parsed = parseCommand(pending)) {
        const command: Command = { raw: pending.subarray(0, parsed.end), args: parsed.args };
        pending = pending.subarray(parsed.end);
        this.forward(command, redis);
      }
    });
    redis.on('data', (chunk: Buffer) => {
      if (this.holding !== 'replies') client.write(chunk);
    });
  }

  private forward(command: Command, redis: Socket): void {
    if (this.holding === 'commands') {
      this.held.push(command.args);
      return;
    }
    redis.write(command.raw);
    if (this.armed && !this.holding && this.armed.match(command.args)) this.holding = this.armed.hold;
  }
}

describe('memory: a worker SIGKILLed between remember’s write and its result (real processes)', () => {
  let tg: FakeTelegram;
  let model: FakeOpenAI;
  let gateway: Spawned | undefined;
  let env: Record<string, string>;
  let root: string;
  let redis: Redis;
  let keys: RedisKeys;
  const workers: Spawned[] = [];
  const taps: RedisTap[] = [];

  beforeAll(async () => {
    redis = testRedis();
    tg = await startFakeTelegram();
    model = await startFakeOpenAI();
    model.setHandler(script);
    root = await mkdtemp(join(tmpdir(), 'sb-memcrash-'));
    env = productEnv(
      { prefix: uniquePrefix('memcrash'), modelUrl: model.baseURL, root },
      {
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_ROOT: tg.apiRoot,
        MEMORY: 'person',
        STREAM_ANSWERS: '0',
        // A dead worker's run comes back in about 3 s (as in KillRig).
        LOCK_DURATION_MS: '2000',
        STALLED_INTERVAL_MS: '1000',
        RECONCILE_INTERVAL_MS: '3600000',
      },
    );
    keys = new RedisKeys(env.QUEUE_PREFIX!);
    // The memory script in Redis's script cache, so the worker's EVALSHA of it is the write (not a NOSCRIPT, then an EVAL).
    await new MemoryStore(redis, keys, { maxEntries: 10 }).remember({ agent: 'default', owner: 'telegram:1' }, 'warm-up', 'said');
    const gw = spawnNode('src/cli/main.ts', ['gateway'], env);
    gateway = gw;
    await waitFor('the gateway to connect', () => tg.pendingPolls() > 0 || (gw.child.exitCode !== null && Promise.reject(new Error(gw.stderr()))), 60_000);
  }, 90_000);

  afterAll(async () => {
    for (const w of workers) {
      w.kill('SIGKILL');
      await w.exited;
    }
    for (const t of taps) await t.close();
    gateway?.kill('SIGTERM');
    await gateway?.exited;
    await model?.close();
    await tg?.close();
    if (env) await dropPrefix(redis, env.QUEUE_PREFIX!);
    redis?.disconnect();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const memoryKey = (chat: number) => keys.memory('default', `telegram:${chat}`);
  const sessionOf = (chat: number) => sessionKeyOf({ platform: 'telegram', conversation: String(chat) });
  const journalOf = async (chat: number) => parseJournal(await redis.lrange(keys.journal(sessionOf(chat)), 0, -1));
  /** What the person sees in the chat: the bot's messages, status messages and placeholders apart. */
  const visible = (chat: number) => tg.sent.filter((m) => m.chatId === chat && !m.silent && !m.deleted && m.raw !== PLACEHOLDER).map((m) => m.text);
  /** A journal write (the session store's script: the journal key among its keys) carrying remember's result. */
  const journalsResult = (chat: number) => (args: string[]) =>
    args.includes(keys.journal(sessionOf(chat))) && args.some((a) => a.includes('"t":"tool_end"') && a.includes('"name":"remember"'));

  /**
   * A worker behind a tap armed with `hold` and `match` takes the DM; once `stopped` holds it is
   * SIGKILLed; what it left is returned, then a second worker takes the turn over and answers.
   */
  async function crashAndResume(
    chat: number,
    hold: 'commands' | 'replies',
    match: (args: string[]) => boolean,
    stopped: (tap: RedisTap) => Promise<unknown>,
  ): Promise<{ left: JournalEntry[]; doomedRequests: RecordedRequest[]; resumed: RecordedRequest[]; heir: Spawned }> {
    const tap = await RedisTap.start(REDIS_URL);
    taps.push(tap);
    const doomed = await spawnWorker({ ...env, REDIS_URL: tap.url });
    workers.push(doomed);
    tap.arm(hold, match);
    const before = model.requests.length;
    void tg.pushUpdate({
      message: tg.message({
        chat: { id: chat, type: 'private' },
        from: { id: chat, is_bot: false, first_name: 'Ada' },
        text: 'remember that my build server is atlas-7',
      }),
    });
    await waitFor('the tap to strike', () => tap.struck, 30_000);
    await stopped(tap);
    doomed.kill('SIGKILL');
    await doomed.exited;
    // What the next worker takes over: the journal as the killed worker left it.
    const left = await journalOf(chat);
    const doomedRequests = model.requests.slice(before);
    expect(visible(chat)).toEqual([]);

    const heir = await spawnWorker(env);
    workers.push(heir);
    await waitFor('the answer', () => visible(chat).length > 0, 30_000);
    // A second copy, if any, has had time to land.
    await new Promise((r) => setTimeout(r, 1_500));
    // One worker at a time: the next test's doomed worker takes its own DM.
    heir.kill('SIGTERM');
    await heir.exited;
    return { left, doomedRequests, resumed: model.requests.slice(before + doomedRequests.length), heir };
  }

  /** What holds however the worker died: one entry (the person's words, kept), one answer, a completed run that resumed the turn. */
  async function expectOneEntryOneAnswer(chat: number, heir: Spawned): Promise<void> {
    const entries = Object.values(await redis.hgetall(memoryKey(chat))).map((raw) => JSON.parse(raw) as MemoryEntry);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ id: entryId(FACT), text: FACT, provenance: 'said', state: 'kept' });
    expect(visible(chat)).toEqual(['Noted.']);
    const last = JSON.parse((await redis.get(keys.last(sessionOf(chat))))!) as LastRun;
    expect(last.state).toBe('completed');
    expect(heir.stderr()).toMatch(/"resumed":true[^\n]*"run started"/);
    for (const r of model.requests) expect(script(r).content ?? '').not.toMatch(/^unscripted/);
  }

  const rememberStarted = (left: JournalEntry[]) => left.filter((e): e is ToolStart => e.t === 'tool_start' && e.name === 'remember');
  const rememberEnded = (left: JournalEntry[]) => left.filter((e): e is ToolEnd => e.t === 'tool_end' && e.name === 'remember');

  it('killed after the entry was written, before its result was journaled: "interrupted", remembered again, one entry', async () => {
    const chat = 72_001;
    const id = entryId(FACT);
    const { left, doomedRequests, resumed, heir } = await crashAndResume(
      chat,
      'commands',
      // remember's write: the memory script with the entry (its JSON) for this person's memory.
      (args) => args.includes(memoryKey(chat)) && args.some((a) => a.includes(`"text":"${FACT}"`)),
      async (tap) => {
        // The worker had the write's reply and went on to journal the result: that write is held, never done.
        await waitFor('the result’s journal write, held', () => tap.held.some(journalsResult(chat)), 10_000);
        expect(await redis.hlen(memoryKey(chat))).toBe(1);
      },
    );
    expect(doomedRequests).toHaveLength(1);
    expect(rememberStarted(left)).toHaveLength(1);
    expect(rememberEnded(left)).toEqual([]);

    await expectOneEntryOneAnswer(chat, heir);
    // The remember step was replayed from the journal (not asked again) and its call reported interrupted;
    // the loop drops the model's identical retry once with its repeat nudge, the model insists, and
    // the retry finds the entry already there.
    expect(resultFor(resumed[0]!)).toBe('remember');
    expect(String(lastOf(resumed[0]!).content)).toContain(INTERRUPTED);
    const nudges = resumed.filter((r) => lastOf(r).content === REPEAT_NUDGE).length;
    expect(nudges).toBeLessThanOrEqual(1);
    expect(resumed).toHaveLength(2 + nudges);
    expect(resultFor(resumed.at(-1)!)).toBe('remember');
    expect(String(lastOf(resumed.at(-1)!).content)).toBe(`Already remembered [${id}]: ${FACT}`);
  }, 60_000);

  it('killed after the result was journaled, before the worker heard back: the result replayed, one entry', async () => {
    const chat = 72_002;
    const id = entryId(FACT);
    const { left, doomedRequests, resumed, heir } = await crashAndResume(chat, 'replies', journalsResult(chat), async () => {
      await waitFor('the result in the journal', async () => rememberEnded(await journalOf(chat)).length > 0, 10_000);
      expect(await redis.hlen(memoryKey(chat))).toBe(1);
    });
    expect(doomedRequests).toHaveLength(1);
    const started = rememberStarted(left);
    expect(started).toHaveLength(1);
    expect(rememberEnded(left)).toMatchObject([{ callId: started[0]!.callId, ok: true, content: `Remembered [${id}]: ${FACT}` }]);

    await expectOneEntryOneAnswer(chat, heir);
    // Both steps replayed: the model is asked once, about the recorded result.
    expect(resumed).toHaveLength(1);
    expect(resultFor(resumed[0]!)).toBe('remember');
    expect(String(lastOf(resumed[0]!).content)).toBe(`Remembered [${id}]: ${FACT}`);
  }, 60_000);
});
