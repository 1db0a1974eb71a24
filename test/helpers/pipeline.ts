import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest, type Step } from '../fakes/openai-server.js';
import { SessionKeys } from '../../src/queue/keys.js';
import { createRunQueue, type RunQueue } from '../../src/queue/run-queue.js';
import { Producer } from '../../src/queue/producer.js';
import { terminalMessage } from '../../src/channels/terminal/inbound.js';
import { terminalStreamKey, type TerminalEvent } from '../../src/channels/terminal/stream.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import type { InboundMessage } from '../../src/channels/types.js';
import type { ChatMessage } from '../../src/agent/types.js';
import { dropPrefix, REDIS_URL, testRedis, uniquePrefix } from './redis.js';
import { spawnWorker, waitFor, type Spawned } from './processes.js';

export interface Interval {
  session: string;
  start: number;
  end: number;
  messages: string[];
}

/**
 * Real Redis, real worker processes, the real openai client inside them, and a fake model that
 * answers each turn with "ack <the message texts of the turn>" after a delay it chooses, and
 * records when each session's model call was in flight.
 */
export class PipelineHarness {
  readonly redis: Redis;
  readonly keys: SessionKeys;
  readonly queue: RunQueue;
  readonly producer: Producer;
  readonly intervals: Interval[] = [];
  readonly workers: Spawned[] = [];
  private inflight = 0;
  maxInflight = 0;

  private constructor(
    readonly prefix: string,
    readonly fake: FakeOpenAI,
    readonly workspaceRoot: string,
    readonly env: Record<string, string>,
  ) {
    this.redis = testRedis();
    this.keys = new SessionKeys(prefix, 'runs');
    this.queue = createRunQueue(
      { prefix, name: 'runs', concurrency: 1, lockDurationMs: 0, stalledIntervalMs: 0, reconcileIntervalMs: 0, foldMax: 10 },
      this.redis,
    );
    this.producer = new Producer(this.redis, this.queue, this.keys);
  }

  /** Called when the fake model receives a turn (e.g. to send the next message at the run's last instant). */
  onTurn: ((turn: Interval) => void) | undefined;

  static async start(name: string, options: { delayMs?: (req: RecordedRequest) => number; env?: Record<string, string> } = {}): Promise<PipelineHarness> {
    const fake = await startFakeOpenAI();
    const workspaceRoot = await mkdtemp(join(tmpdir(), 'sb-pipeline-'));
    const prefix = uniquePrefix(name);
    const env = {
      REDIS_URL,
      QUEUE_PREFIX: prefix,
      OPENAI_BASE_URL: fake.baseURL,
      OPENAI_API_KEY: 'test-key-not-secret',
      AGENT_MODEL: 'fake-model',
      WORKSPACE_ROOT: workspaceRoot,
      STATUS_AFTER_MS: '0',
      // Memory adds three tools to every request; the tests that are about it (test/memory) turn it on.
      MEMORY: 'off',
      ...options.env,
    };
    const h = new PipelineHarness(prefix, fake, workspaceRoot, env);
    const delay = options.delayMs ?? (() => 5);
    fake.setHandler((req) => h.answer(req, delay(req)));
    return h;
  }

  /** The fake model: one call per turn, answering the turn's user messages. */
  private answer(req: RecordedRequest, delayMs: number): Step {
    const messages = req.body.messages as ChatMessage[];
    let i = messages.length;
    while (i > 0 && messages[i - 1]!.role === 'user') i--;
    const texts = messages.slice(i).map((m) => String(m.content));
    const session = texts[0]?.split(' ')[0] ?? '?';
    const start = Date.now();
    const turn = { session, start, end: start + delayMs, messages: texts };
    this.intervals.push(turn);
    this.onTurn?.(turn);
    this.inflight += 1;
    this.maxInflight = Math.max(this.maxInflight, this.inflight);
    setTimeout(() => (this.inflight -= 1), delayMs);
    return { content: `ack ${texts.join(' | ')}`, delayMs };
  }

  async addWorkers(count: number, env: Record<string, string> = {}): Promise<Spawned[]> {
    const started = await Promise.all(Array.from({ length: count }, () => spawnWorker({ ...this.env, ...env })));
    this.workers.push(...started);
    return started;
  }

  message(session: string, text: string): InboundMessage {
    return terminalMessage(session, text, 'tester');
  }

  async send(session: string, text: string): Promise<InboundMessage> {
    const message = this.message(session, text);
    await this.producer.enqueue(message);
    return message;
  }

  /** Every event the workers wrote for one terminal session. */
  async events(session: string): Promise<TerminalEvent[]> {
    const entries = await this.redis.xrange(terminalStreamKey(this.prefix, session), '-', '+');
    return entries.map(([, fields]) => JSON.parse(fields[1]!) as TerminalEvent);
  }

  /** Message id → how many 'ended' events named it, over the given sessions. */
  async endedCounts(sessions: string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const s of sessions) {
      for (const e of await this.events(s)) {
        if (e.type !== 'ended') continue;
        for (const id of e.outcome.messageIds) counts.set(id, (counts.get(id) ?? 0) + 1);
      }
    }
    return counts;
  }

  async waitEnded(sessions: string[], ids: string[], timeoutMs = 60_000): Promise<Map<string, number>> {
    return waitFor(
      `${ids.length} messages answered`,
      async () => {
        const counts = await this.endedCounts(sessions);
        return ids.every((id) => counts.has(id)) && counts;
      },
      timeoutMs,
      100,
    );
  }

  /** The user texts stored in a session's history, in order. */
  async historyTexts(session: string): Promise<string[]> {
    const key = this.keys.history(sessionKeyOf({ platform: 'terminal', conversation: session }));
    const turns = (await this.redis.lrange(key, 0, -1)).map((t) => JSON.parse(t) as ChatMessage[]);
    return turns.flatMap((turn) => turn.filter((m) => m.role === 'user').map((m) => String(m.content)));
  }

  /** Pairs of model calls of one session that were in flight at the same time. */
  overlaps(): [Interval, Interval][] {
    const bySession = new Map<string, Interval[]>();
    for (const i of this.intervals) bySession.set(i.session, [...(bySession.get(i.session) ?? []), i]);
    const found: [Interval, Interval][] = [];
    for (const list of bySession.values()) {
      const sorted = [...list].sort((a, b) => a.start - b.start);
      for (let k = 1; k < sorted.length; k++) if (sorted[k]!.start < sorted[k - 1]!.end) found.push([sorted[k - 1]!, sorted[k]!]);
    }
    return found;
  }

  async close(): Promise<void> {
    for (const w of this.workers) w.kill('SIGKILL');
    await Promise.all(this.workers.map((w) => w.exited));
    await this.queue.close();
    await dropPrefix(this.redis, this.prefix);
    this.redis.disconnect();
    await this.fake.close();
    await rm(this.workspaceRoot, { recursive: true, force: true });
  }
}
