import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/agent/types.js';
import { PLACEHOLDER } from '../../src/channels/kit/pieces.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { entryId, type MemoryEntry } from '../../src/memory/entry.js';
import type { LastRun } from '../../src/queue/job-data.js';
import { RedisKeys } from '../../src/queue/keys.js';
import { parseJournal, type JournalEntry } from '../../src/session/journal.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest, type ReplyStep } from '../fakes/openai-server.js';
import { startFakeTelegram, TOKEN, type FakeTelegram } from '../fakes/telegram-server.js';
import { spawnNode, spawnWorker, waitFor, type Spawned } from '../helpers/processes.js';
import { productEnv } from '../helpers/product-env.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

/**
 * "SIGKILL of the worker between remember's write and its result: one entry." A worker process is
 * frozen (SIGSTOP) the moment Redis announces the memory hash's HSET (a keyspace notification),
 * the journal it left is read, then it is SIGKILLed and a second worker takes the turn over. The
 * freeze usually lands before the tool result is journaled (the resumed run reads "interrupted"
 * and the model calls remember again: the same text is the same entry); when it lands after, the
 * resumed run replays the recorded result. Either way: one entry, one answer, a completed run.
 *
 * The rig is KillRig's (test/helpers/kill-rig.ts) with the kill point moved from a platform call
 * to a Redis write and a model that calls tools: one gateway, one worker at a time.
 */

const CHAT = 72_001;
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
  if (last.role === 'user') return rememberCall();
  if (resultFor(req) === 'remember') return String(last.content).startsWith(INTERRUPTED) ? rememberCall() : { content: 'Noted.' };
  return { content: `unscripted request: ${JSON.stringify(last).slice(0, 200)}` };
}

describe('memory: a worker SIGKILLed between remember’s write and its result (real processes)', () => {
  let tg: FakeTelegram;
  let model: FakeOpenAI;
  let gateway: Spawned | undefined;
  let env: Record<string, string>;
  let root: string;
  let redis: Redis;
  let events: Redis;
  let savedNotify: string | undefined;
  const workers: Spawned[] = [];

  beforeAll(async () => {
    redis = testRedis();
    events = testRedis();
    // Keyspace events for hashes (K: __keyspace@…, h: hash commands), added to whatever was set; restored in afterAll.
    const [, previous] = (await redis.config('GET', 'notify-keyspace-events')) as [string, string];
    savedNotify = previous;
    await redis.config('SET', 'notify-keyspace-events', `${previous}Kh`);
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
    const gw = spawnNode('src/cli/main.ts', ['gateway'], env);
    gateway = gw;
    await waitFor('the gateway to connect', () => tg.pendingPolls() > 0 || (gw.child.exitCode !== null && Promise.reject(new Error(gw.stderr()))), 60_000);
  }, 90_000);

  afterAll(async () => {
    for (const w of workers) {
      w.kill('SIGKILL');
      await w.exited;
    }
    gateway?.kill('SIGTERM');
    await gateway?.exited;
    await model?.close();
    await tg?.close();
    if (savedNotify !== undefined) await redis.config('SET', 'notify-keyspace-events', savedNotify);
    if (env) await dropPrefix(redis, env.QUEUE_PREFIX!);
    events?.disconnect();
    redis?.disconnect();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const keys = () => new RedisKeys(env.QUEUE_PREFIX!);
  const session = sessionKeyOf({ platform: 'telegram', conversation: String(CHAT) });
  const memoryKey = () => keys().memory('default', `telegram:${CHAT}`);
  const journal = async () => parseJournal(await redis.lrange(keys().journal(session), 0, -1));
  /** What the person sees in the chat: the bot's messages, status messages and placeholders apart. */
  const visible = () => tg.sent.filter((m) => m.chatId === CHAT && !m.silent && !m.deleted && m.raw !== PLACEHOLDER).map((m) => m.text);

  it('one entry, one answer, a completed run; the resumed run reads the journaled result or "interrupted"', async () => {
    const doomed = await spawnWorker(env);
    workers.push(doomed);

    // Frozen at the memory hash's first HSET (remember's write), before it can go on to journal the result.
    let frozen = false;
    const channel = `__keyspace@${redis.options.db ?? 0}__:${memoryKey()}`;
    events.on('message', (ch: string, event: string) => {
      if (ch !== channel || event !== 'hset' || frozen) return;
      frozen = true;
      doomed.kill('SIGSTOP');
    });
    await events.subscribe(channel);

    void tg.pushUpdate({
      message: tg.message({
        chat: { id: CHAT, type: 'private' },
        from: { id: CHAT, is_bot: false, first_name: 'Ada' },
        text: 'remember that my build server is atlas-7',
      }),
    });
    await waitFor('remember’s write', () => frozen, 30_000);
    // Whatever the worker had sent before the freeze lands; frozen, it sends nothing more.
    await new Promise((r) => setTimeout(r, 300));
    const atFreeze = await journal();
    doomed.kill('SIGKILL');
    await doomed.exited;
    await events.unsubscribe(channel);
    // What the next worker takes over: the journal as the killed worker left it.
    const left = await journal();
    expect(left).toEqual(atFreeze);
    expect(await redis.hlen(memoryKey())).toBe(1);
    const started = left.filter((e): e is ToolStart => e.t === 'tool_start' && e.name === 'remember');
    expect(started).toHaveLength(1);
    const journaled = left.some((e): e is ToolEnd => e.t === 'tool_end' && e.callId === started[0]!.callId);
    console.info(`remember-crash: the worker was killed ${journaled ? 'AFTER' : 'BEFORE'} remember's result was journaled`);
    const requestsBefore = model.requests.length;
    expect(visible()).toEqual([]);

    const heir = await spawnWorker(env);
    workers.push(heir);
    await waitFor('the answer', () => visible().length > 0, 30_000);
    // A second copy, if any, has had time to land.
    await new Promise((r) => setTimeout(r, 1_500));

    // One entry, the person's own words, kept.
    const entries = Object.values(await redis.hgetall(memoryKey())).map((raw) => JSON.parse(raw) as MemoryEntry);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ id: entryId(FACT), text: FACT, provenance: 'said', state: 'kept' });
    // One answer.
    expect(visible()).toEqual(['Noted.']);
    // The run that took the turn over completed it.
    const last = JSON.parse((await redis.get(keys().last(session)))!) as LastRun;
    expect(last.state).toBe('completed');
    expect(heir.stderr()).toMatch(/"resumed":true[^\n]*"run started"/);

    // What the model saw in the resumed run: the remember call's step was replayed from the journal, not asked again.
    const resumed = model.requests.slice(requestsBefore);
    console.info('DEBUG', requestsBefore, JSON.stringify(model.requests.map((r) => messagesOf(r).slice(1)), null, 1));
    const id = entryId(FACT);
    if (journaled) {
      expect(resumed).toHaveLength(1);
      expect(resultFor(resumed[0]!)).toBe('remember');
      expect(String(lastOf(resumed[0]!).content)).toBe(`Remembered [${id}]: ${FACT}`);
    } else {
      // Interrupted: "may or may not have taken effect"; the model remembers again and it is the entry already there.
      expect(resumed).toHaveLength(2);
      expect(resultFor(resumed[0]!)).toBe('remember');
      expect(String(lastOf(resumed[0]!).content)).toContain(INTERRUPTED);
      expect(resultFor(resumed[1]!)).toBe('remember');
      expect(String(lastOf(resumed[1]!).content)).toBe(`Already remembered [${id}]: ${FACT}`);
    }
    // Every request the model got was one the script expected.
    expect(model.requests.every((r) => r.unexpected !== true)).toBe(true);
    for (const r of model.requests) expect(script(r).content ?? '').not.toMatch(/^unscripted/);
  }, 120_000);
});
