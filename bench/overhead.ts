import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { Intake } from '../src/intake/intake.js';
import { createOpenAIModel } from '../src/agent/openai-model.js';
import { terminalMessage } from '../src/channels/terminal/inbound.js';
import { createLogger } from '../src/log.js';
import { SessionControl } from '../src/session/control.js';
import { SessionKeys } from '../src/queue/keys.js';
import { Producer } from '../src/queue/producer.js';
import { createRunQueue } from '../src/queue/run-queue.js';
import { connectRedis, isClusterUrl } from '../src/queue/connection.js';
import type { RunResult } from '../src/queue/job-data.js';
import { waitFor, type Spawned } from '../test/helpers/processes.js';
import { onAbort, spawnNodeTracked, spawnWorkersTracked, stopAll } from './children.js';
import { dropPrefix } from '../test/helpers/redis.js';
import { closedLoop, Completions } from './load.js';
import { summarise, type LatencySummary } from './stats.js';

export interface LoadShape {
  sessions: number;
  perSession: number;
}

const quiet = createLogger('silent');
let seq = 0;
const prefixFor = (what: string) => `{bench-${what}-${process.pid}-${++seq}}`;

/**
 * Switchboard's own path for a one-call turn: the gateway's intake (inbox append + run job),
 * a worker process claiming, calling the model, committing and delivering (terminal channel:
 * a Redis stream), then the job completing. `workers` processes share the load.
 */
export async function measurePipeline(
  redisUrl: string,
  modelUrl: string,
  shape: LoadShape,
  workers: number,
  concurrencyPerWorker: number,
): Promise<LatencySummary & { lost: number }> {
  const prefix = prefixFor('pipe');
  const workspaceRoot = await mkdtemp(join(tmpdir(), 'sb-bench-'));
  const dispose = isClusterUrl(redisUrl) ? undefined : onAbort(() => dropWith(redisUrl, prefix));
  const procs: Spawned[] = await spawnWorkersTracked(workers, {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: 'bench',
    AGENT_MODEL: 'fake-model',
    WORKSPACE_ROOT: workspaceRoot,
    WORKER_CONCURRENCY: String(concurrencyPerWorker),
  });
  let redis: Redis | undefined;
  let queue: ReturnType<typeof createRunQueue> | undefined;
  let events: QueueEvents | undefined;
  let eventsConnection: Redis | undefined;
  try {
    redis = connectRedis(redisUrl, 'bench');
    const keys = new SessionKeys(prefix, 'runs');
    const config = { prefix, name: 'runs', concurrency: 1, lockDurationMs: 30_000, stalledIntervalMs: 15_000, reconcileIntervalMs: 30_000, foldMax: 10 };
    queue = createRunQueue(config, redis);
    const intake = new Intake(new Producer(redis, queue, keys), new SessionControl(redis, keys), quiet);
    // From the start of the (fresh) event stream: '$' would lose events written before the first read.
    eventsConnection = connectRedis(redisUrl, 'bench-events');
    events = new QueueEvents('runs', { connection: eventsConnection, prefix, lastEventId: '0' });
    await events.waitUntilReady();
    const completions = new Completions();
    events.on('completed', ({ returnvalue }) => {
      const result = (typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue) as RunResult;
      for (const id of result.messageIds) completions.done(id);
    });
    const { latencies, seconds } = await closedLoop(shape.sessions, shape.perSession, async (s, i) => {
      const message = terminalMessage(`bench-${s}`, `message ${i} of session ${s}`, 'bench');
      const done = completions.wait(message.id);
      await intake.accept(message);
      await done;
    });
    const counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'active');
    return { ...summarise(latencies, seconds), lost: shape.sessions * shape.perSession - (counts.completed ?? 0) };
  } finally {
    // A cluster is thrown away whole; a shared Redis is cleaned key by key.
    await teardown({ events, eventsConnection, procs, queue, redis, prefix: isClusterUrl(redisUrl) ? undefined : prefix, dispose });
    await rm(workspaceRoot, { recursive: true, force: true });
  }
}

/** The floor: raw BullMQ add → empty processor in a worker process → completed, same shape. */
export async function measureFloor(redisUrl: string, shape: LoadShape, workers: number, concurrencyPerWorker: number): Promise<LatencySummary> {
  const prefix = prefixFor('floor');
  const dispose = onAbort(() => dropWith(redisUrl, prefix));
  const procs = Array.from({ length: workers }, () =>
    spawnNodeTracked('bench/floor-worker.ts', ['floor', prefix, String(concurrencyPerWorker)], { REDIS_URL: redisUrl }),
  );
  let redis: Redis | undefined;
  let queue: Queue | undefined;
  let events: QueueEvents | undefined;
  let eventsConnection: Redis | undefined;
  try {
    await Promise.all(
      procs.map((p) =>
        waitFor(
          'floor worker',
          () => p.stdout().includes('ready') || (p.child.exitCode !== null && Promise.reject(new Error(`floor worker exited: ${p.stderr().slice(-2000)}`))),
          20_000,
        ),
      ),
    );
    redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    queue = new Queue('floor', { connection: redis, prefix });
    eventsConnection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    events = new QueueEvents('floor', { connection: eventsConnection, prefix, lastEventId: '0' });
    await events.waitUntilReady();
    const completions = new Completions();
    events.on('completed', ({ jobId }) => completions.done(jobId));
    const q = queue;
    const { latencies, seconds } = await closedLoop(shape.sessions, shape.perSession, async (s, i) => {
      const job = await q.add('job', { s, i }, { removeOnComplete: { count: 5_000 } });
      await completions.wait(job.id!);
    });
    return summarise(latencies, seconds);
  } finally {
    await teardown({ events, eventsConnection, procs, queue, redis, prefix, dispose });
  }
}

/** For an aborted run (SIGINT): the measurement's keys, on a connection of its own. */
async function dropWith(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  try {
    await dropPrefix(redis, prefix);
  } finally {
    redis.disconnect();
  }
}

/**
 * Stops one measurement's processes (by their pids; first, so that nothing is left running if a
 * later step throws) and connections, and deletes its keys when given a prefix and a connection.
 */
async function teardown(rig: {
  events?: QueueEvents;
  eventsConnection?: Redis | undefined;
  procs: Spawned[];
  queue?: Queue;
  redis?: Redis | undefined;
  prefix: string | undefined;
  dispose?: () => void;
}) {
  await stopAll(rig.procs);
  rig.dispose?.();
  try {
    await rig.events?.close();
    rig.eventsConnection?.disconnect();
    await rig.queue?.close();
    if (rig.prefix && rig.redis) await dropPrefix(rig.redis, rig.prefix);
  } finally {
    rig.redis?.disconnect();
  }
}

/** The model call alone (the real openai client to the zero-latency fake), same shape: part of every turn. */
export async function measureModelCall(modelUrl: string, shape: LoadShape): Promise<LatencySummary> {
  const model = createOpenAIModel({ apiKey: 'bench', baseURL: modelUrl, model: 'fake-model', stream: false, timeoutMs: 30_000 });
  const { latencies, seconds } = await closedLoop(shape.sessions, shape.perSession, async (s, i) => {
    const response = await model.complete({
      messages: [{ role: 'user', content: `message ${i} of session ${s}` }],
      tools: [],
      signal: new AbortController().signal,
    });
    if (response.stopReason === 'error') throw new Error(response.error?.message);
  });
  return summarise(latencies, seconds);
}
