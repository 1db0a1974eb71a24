// npm run bench: what the pipeline costs on top of BullMQ and the model, side by side with the
// floor, in one run. Prints a table and writes bench/results.json. Method: docs/benchmarks.md.
//
// `npm run bench -- --quick` (or BENCH_QUICK=1): every phase with a handful of turns, the
// product run from the sources (tsx, no build step), no clean-build measurement, results.json
// left alone; it checks that the rig works (test/bench/quick.test.ts runs it), its figures mean
// little. Nothing is asserted in either mode: these are measurements.
//
// Every process the bench starts is registered by pid (bench/children.ts): each phase stops its
// own in a finally, and an exit handler kills whatever is left, on success, failure, exception
// and SIGINT/SIGTERM alike.
import { writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';
import { waitFor, type Spawned } from '../test/helpers/processes.js';
import { dropPrefix } from '../test/helpers/redis.js';
import { measureFloor, measureModelCall, measurePipeline, type LoadShape } from './overhead.js';
import { requestBytes, requestTokens } from './prompt-tokens.js';
import { BUILT_MAIN, dmAndWait, rss, seedTwoHop, SOURCE_MAIN, startRole, startTelegramRig, TWO_HOP_QUESTION } from './rig.js';
import { percentile, ratio } from './stats.js';
import { measureCluster } from './cluster.js';
import { mcpPromptCost } from './mcp-tokens.js';
import { skillPromptCost } from './skill-tokens.js';
import { memoryCost } from './memory-cost.js';
import { measureStartupBuild, type StartupBuild, type StartupQuick } from './startup-build.js';
import { measureRedisPerTurn } from './redis-cost.js';
import { measureStreamLatency, PLATFORMS, type PlatformStreamLatency, type StreamLatency } from './stream-latency.js';
import { exitOf, installExitHandlers, onAbort, spawnTracked, stop, stopAll, untrack } from './children.js';

installExitHandlers();

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUICK = process.argv.includes('--quick') || ['1', 'true', 'yes'].includes((process.env.BENCH_QUICK ?? '').toLowerCase());
/** `npm run bench -- --startup`: only the npm start figures (clean build vs restart), printed, results.json untouched. */
const STARTUP_ONLY = process.argv.includes('--startup');
/** `npm run bench -- --stream`: only the streamed-answer figures (first token → first visible words), printed, results.json untouched. */
const STREAM_ONLY = process.argv.includes('--stream');
/** `npm run bench -- --pipeline`: only the two-hop turn, the Redis cost per two-hop turn and the pipeline vs the floor at one session, printed, results.json untouched. */
const PIPELINE_ONLY = process.argv.includes('--pipeline');
/** `npm run bench -- --skills`: only the first request's tokens with 20 skills, printed, results.json untouched. */
const SKILLS_ONLY = process.argv.includes('--skills');
/** `npm run bench -- --memory`: only memory with 500 entries (the first request's block and tools, recall latency), printed. */
const MEMORY_ONLY = process.argv.includes('--memory');
/** What the product runs from: the compiled build as `npm start` runs it; in quick mode the sources (no build step). */
const MAIN = QUICK ? SOURCE_MAIN : BUILT_MAIN;
/** The sizes of each phase: full, or a handful in quick mode. */
const SIZE = QUICK
  ? {
      starts: 1,
      warmTurns: 5,
      memorySessions: 50,
      idleWaitMs: 500,
      startupRestarts: 0,
      redisTurns: 5,
      // Quick scale-out runs only the two-worker case: the overhead phase already runs one worker.
      overhead: [{ sessions: 5, perSession: 4 }],
      scaleOut: { shape: { sessions: 10, perSession: 2 }, workers: [2] },
      cluster: { sessions: 10, perSession: 2 },
      streamAnswers: 2,
    }
  : {
      starts: 3,
      warmTurns: 50,
      memorySessions: 10_000,
      idleWaitMs: 2_000,
      startupRestarts: 5,
      redisTurns: 50,
      overhead: [
        { sessions: 1, perSession: 200 },
        { sessions: 100, perSession: 10 },
        { sessions: 1_000, perSession: 2 },
      ],
      scaleOut: { shape: { sessions: 200, perSession: 5 }, workers: [1, 2, 4] },
      cluster: { sessions: 100, perSession: 10 },
      streamAnswers: 10,
    };
const round = (v: number) => Math.round(v * 10) / 10;
const log = (line: string) => process.stderr.write(`${line}\n`);
let prefixSeq = 0;
const freshPrefix = (what: string) => `{bench-${what}-${process.pid}-${++prefixSeq}}`;

/** What the phases measured so far, printed if a later one fails. */
const measured: Record<string, unknown> = {};

/** Runs one phase, logging how long it took (stderr). */
async function phase<T>(title: string, run: () => Promise<T>): Promise<T> {
  log(title);
  const t0 = performance.now();
  try {
    const result = await run();
    measured[title] = result;
    return result;
  } finally {
    log(`  (${Math.round((performance.now() - t0) / 100) / 10} s)`);
  }
}

/** A fresh key prefix for a phase, whose keys are deleted on SIGINT too (its finally calls dropBenchPrefix). */
const phasePrefix = (what: string) => {
  const prefix = freshPrefix(what);
  abortCleanups.set(
    prefix,
    onAbort(() => dropBenchPrefix(prefix)),
  );
  return prefix;
};
const abortCleanups = new Map<string, () => void>();

/** Deletes a phase's keys from the shared Redis (the one the bench was given, not the tests' default). */
async function dropBenchPrefix(prefix: string): Promise<void> {
  abortCleanups.get(prefix)?.();
  abortCleanups.delete(prefix);
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  try {
    await dropPrefix(redis, prefix);
  } finally {
    redis.disconnect();
  }
}

async function telegramTurns() {
  const prefix = phasePrefix('tg');
  const rig = await startTelegramRig(REDIS_URL, prefix);
  const starts: number[] = [];
  let proc: Spawned | undefined;
  try {
    // Start-up: process start → /readyz 200 (Redis, a worker, Telegram polling). Once in dev
    // mode (tsx compiling on the fly), then three times as `npm start` runs it. (Quick mode runs
    // from the sources anyway: one start, which is both.)
    let devModeMs: number | undefined;
    if (!QUICK) {
      const dev = await startRole('all', rig.env, SOURCE_MAIN);
      devModeMs = dev.readyMs;
      await stop(dev.proc);
    }
    for (let i = 0; i < SIZE.starts; i++) {
      const started = await startRole('all', rig.env, MAIN);
      starts.push(started.readyMs);
      if (i < SIZE.starts - 1) await stop(started.proc);
      else proc = started.proc;
    }
    await seedTwoHop(rig, 1);
    const cold = await dmAndWait(rig, 1, TWO_HOP_QUESTION);
    const requests = rig.model.requests.slice(0, 3);
    const warm: number[] = [];
    for (let chat = 2; chat < 2 + SIZE.warmTurns; chat++) {
      await seedTwoHop(rig, chat);
      warm.push(await dmAndWait(rig, chat, TWO_HOP_QUESTION));
    }
    const tokens = requests.map(requestTokens);
    return {
      startup: { runsMs: starts.map(round), medianMs: round(percentile(starts, 50)), devModeMs: round(devModeMs ?? starts[0]!) },
      turn: {
        coldMs: round(cold),
        warm: { n: warm.length, p50Ms: round(percentile(warm, 50)), p95Ms: round(percentile(warm, 95)) },
        modelCallsPerTurn: requests.length,
      },
      prompt: {
        firstRequest: tokens[0]!,
        allRequests: tokens.reduce((n, t) => n + t.total, 0),
        bytesSent: requests.reduce((n, r) => n + requestBytes(r), 0),
      },
    };
  } finally {
    try {
      await stop(proc);
      await rig.close();
    } finally {
      await dropBenchPrefix(prefix);
    }
  }
}

async function memory() {
  const prefix = phasePrefix('mem');
  const rig = await startTelegramRig(REDIS_URL, prefix);
  const sessions = SIZE.memorySessions;
  let worker: Spawned | undefined;
  let gateway: Spawned | undefined;
  try {
    // Both at once (each is registered the moment it is spawned, so a failure of one stops both).
    const [w, g] = await Promise.allSettled([startRole('worker', { ...rig.env, WORKER_CONCURRENCY: '32' }, MAIN), startRole('gateway', rig.env, MAIN)]);
    worker = w.status === 'fulfilled' ? w.value.proc : undefined;
    gateway = g.status === 'fulfilled' ? g.value.proc : undefined;
    if (w.status === 'rejected') throw w.reason;
    if (g.status === 'rejected') throw g.reason;
    if (!worker || !gateway) throw new Error('unreachable');
    await new Promise((r) => setTimeout(r, SIZE.idleWaitMs));
    const idle = { gateway: await rss(gateway.pid), worker: await rss(worker.pid) };
    const before = rig.tg.sent.length;
    for (let chat = 1; chat <= sessions; chat++) {
      const from = { id: 1_000_000 + chat, is_bot: false, first_name: 'Load' };
      rig.tg.pushUpdate({ message: rig.tg.message({ chat: { id: 1_000_000 + chat, type: 'private' }, from, text: `hello ${chat}` }) });
    }
    const t0 = performance.now();
    // No deadline for the whole load (a loaded machine is slow, not broken), only for a stall:
    // what has no answer after 60 s without progress is reported as unanswered, not waited for.
    let seen = 0;
    let movedAt = performance.now();
    await waitFor(
      `${sessions} answers`,
      () => {
        const answered = rig.tg.sent.length - before;
        if (answered !== seen) [seen, movedAt] = [answered, performance.now()];
        return answered >= sessions || performance.now() - movedAt > 60_000;
      },
      3_600_000,
      200,
    );
    const answeredChats = new Set(rig.tg.sent.slice(before).map((m) => m.chatId));
    const unanswered: number[] = [];
    for (let chat = 1; chat <= sessions; chat++) if (!answeredChats.has(1_000_000 + chat)) unanswered.push(1_000_000 + chat);
    if (unanswered.length) log(`  ${unanswered.length} of ${sessions} DMs unanswered after 60 s without progress, chats ${unanswered.slice(0, 10).join(', ')}`);
    const seconds = ((unanswered.length ? movedAt : performance.now()) - t0) / 1000;
    const after = { gateway: await rss(gateway.pid), worker: await rss(worker.pid) };
    return {
      idleMiB: { gateway: idle.gateway.now, worker: idle.worker.now },
      afterSessions: sessions,
      peakMiB: { gateway: after.gateway.peak, worker: after.worker.peak },
      turnsPerSecond: round((sessions - unanswered.length) / seconds),
      unanswered: unanswered.length,
      unansweredChats: unanswered.slice(0, 10),
    };
  } finally {
    try {
      await stopAll([gateway, worker]);
      await rig.close();
    } finally {
      await dropBenchPrefix(prefix);
    }
  }
}

async function overhead(modelUrl: string, shapes: LoadShape[] = SIZE.overhead) {
  const rows = [];
  for (const shape of shapes) {
    const floor = await measureFloor(REDIS_URL, shape, 1, shape.sessions);
    const modelCall = await measureModelCall(modelUrl, shape);
    const pipeline = await measurePipeline(REDIS_URL, modelUrl, shape, 1, shape.sessions);
    rows.push({
      concurrency: shape.sessions,
      messages: shape.sessions * shape.perSession,
      floor,
      modelCall,
      pipeline,
      p50Ratio: ratio(pipeline.p50, floor.p50),
      // The issue's measure: the pipeline against what it cannot avoid (the queue's own hop and the model call).
      p50VsFloorAndModel: ratio(pipeline.p50, floor.p50 + modelCall.p50),
      throughputRatio: ratio(pipeline.perSecond, floor.perSecond),
    });
    log(`  overhead at ${shape.sessions}: pipeline p50 ${pipeline.p50} ms vs floor ${floor.p50} ms`);
  }
  return rows;
}

async function scaleOut(modelUrl: string) {
  const shape: LoadShape = SIZE.scaleOut.shape;
  const rows = [];
  for (const workers of SIZE.scaleOut.workers) {
    const r = await measurePipeline(REDIS_URL, modelUrl, shape, workers, 50);
    rows.push({ workers, ...r });
    log(`  ${workers} worker(s): ${r.perSecond} msg/s`);
  }
  const base = rows.find((r) => r.workers === 1)?.perSecond;
  return rows.map((r) => ({ ...r, vsOneWorker: base === undefined ? null : ratio(r.perSecond, base) }));
}

/** npm start, build step included: first start after a clean dist/ vs a restart with nothing changed (quick: one `npm run dev`, no build). */
async function startupBuild(quick = QUICK) {
  const prefix = phasePrefix('start');
  const rig = await startTelegramRig(REDIS_URL, prefix);
  try {
    return await measureStartupBuild(rig.env, SIZE.startupRestarts, quick);
  } finally {
    try {
      await rig.close();
    } finally {
      await dropBenchPrefix(prefix);
    }
  }
}

function startupRows(s: StartupBuild | StartupQuick): [string, string, string][] {
  if ('quick' in s) return [['npm run dev → "ready" (quick: no build measured)', `${s.npmRunDevMs} ms`, '']];
  return [
    ['npm start → "ready": first start after rm -rf dist', `${s.cleanMs} ms (full build)`, ''],
    [
      `npm start → "ready": restart, nothing changed (median of ${s.restartRunsMs.length})`,
      `${s.restartMs} ms (×${s.cleanOverRestart} faster than clean)`,
      '≈ 1,000 ms',
    ],
    ['  restart with tsc on every start (the old prestart)', `${s.tscEveryStartMs} ms (×${s.tscEveryStartOverRestart} the restart)`, ''],
    ['  node dist/cli/main.js alone (no npm, no build step)', `${s.nodeAloneMs} ms`, ''],
  ];
}

/** A streamed answer on each platform: the model's first token → the first visible words (in-process roles, see stream-latency.ts). */
async function streamLatency() {
  const prefixes = Object.fromEntries(PLATFORMS.map((p) => [p, phasePrefix(`stream-${p}`)]));
  try {
    return await measureStreamLatency(SIZE.streamAnswers, (p) => ({ REDIS_URL, QUEUE_PREFIX: prefixes[p]! }));
  } finally {
    for (const prefix of Object.values(prefixes)) await dropBenchPrefix(prefix);
  }
}

const PLATFORM_NAMES = { telegram: 'Telegram', slack: 'Slack', discord: 'Discord' } as const;

function streamRows(s: StreamLatency): [string, string, string][] {
  const rows: [string, string, string][] = [];
  for (const p of PLATFORMS) {
    const x: PlatformStreamLatency = s[p];
    rows.push([
      `streamed answer: first token → first visible words, p50 / max (${PLATFORM_NAMES[p]}, ${x.n} answers)`,
      `${x.firstWords.p50Ms} / ${x.firstWords.maxMs} ms (model to ${s.thresholdChars} chars ${x.threshold.p50Ms} / ${x.threshold.maxMs}, then the adapter ${x.adapter.p50Ms} / ${x.adapter.maxMs}; pacing ${x.gapMs} ms; by ${x.firstWrite.join(', ')})`,
      '',
    ]);
  }
  return rows;
}

/** scripts/build.mjs, as `npm start`'s prestart runs it; registered like every other child. */
async function build(): Promise<void> {
  const child = spawnTracked(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  await exitOf(child);
  untrack(child.pid);
  if (child.exitCode !== 0) throw new Error(`the build (scripts/build.mjs) failed (exit ${child.exitCode ?? child.signalCode})`);
}

async function main() {
  if (MEMORY_ONLY) {
    const m = await phase('6d. memory with 500 entries…', () => memoryCost(REDIS_URL));
    process.stdout.write(`${JSON.stringify(m)}\n`);
    printRows(memoryRows(m));
    return;
  }
  if (SKILLS_ONLY) {
    const s = await phase('6c. first request with 20 skills…', () => skillPromptCost());
    process.stdout.write(`${JSON.stringify(s)}\n`);
    printRows(skillRows(s));
    return;
  }
  if (STARTUP_ONLY) {
    log('npm start: clean build vs restart…');
    const s = await startupBuild(false);
    process.stdout.write(`${JSON.stringify(s)}\n`);
    printRows(startupRows(s));
    return;
  }
  if (STREAM_ONLY) {
    log(`streamed answers: ${SIZE.streamAnswers} per platform${QUICK ? ' (quick)' : ''}…`);
    const s = await phase('7. streamed answer: first token → first visible words…', streamLatency);
    process.stdout.write(`${JSON.stringify(s)}\n`);
    printRows(streamRows(s));
    return;
  }
  // Measure what `npm start` runs: the compiled build (quick mode runs the sources, no build).
  if (!QUICK) await build();
  if (PIPELINE_ONLY) {
    const tg = await phase('1-2. Telegram two-hop turns…', telegramTurns);
    const redisPerTurn = await phase('2b. Redis commands and bytes per two-hop turn (private redis-server)…', () => measureRedisPerTurn(SIZE.redisTurns, MAIN));
    const model = await startFakeOpenAI();
    try {
      model.setHandler(() => ({ content: 'ok' }));
      const over = await phase('4. pipeline vs the BullMQ floor at one session…', () => overhead(model.baseURL, SIZE.overhead.slice(0, 1)));
      process.stdout.write(`${JSON.stringify({ turn: tg.turn, redisPerTurn, overhead: over })}\n`);
      printRows([
        ['warm two-hop Telegram turn, p50 / p95', `${tg.turn.warm.p50Ms} / ${tg.turn.warm.p95Ms} ms (cold ${tg.turn.coldMs} ms)`, '≤ 150 ms'],
        ...redisRows(redisPerTurn),
        ...overheadRows(over),
      ]);
    } finally {
      await model.close();
    }
    return;
  }
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version };
  log(
    `bench on ${machine.cpus} cores, ${machine.memoryGiB} GiB, Node ${machine.node}${QUICK ? ' (quick: a handful of turns per phase, from the sources)' : ''}`,
  );
  const tg = await phase('1-2, 6. Telegram two-hop turns, start-up, prompt cost…', telegramTurns);
  const mcpPrompt = await phase('6b. MCP tool schemas…', mcpPromptCost);
  const skillPrompt = await phase('6c. first request with 20 skills…', () => skillPromptCost());
  const memoryPrompt = await phase('6d. memory with 500 entries…', () => memoryCost(REDIS_URL));
  const startupWithBuild = await phase(
    QUICK ? '1b. npm run dev → ready (quick)…' : '1b. npm start: first start after a clean dist/ vs a restart with nothing changed…',
    () => startupBuild(),
  );
  const redisPerTurn = await phase('2b. Redis commands and bytes per two-hop turn (private redis-server)…', () =>
    measureRedisPerTurn(SIZE.redisTurns, MAIN).catch((err: unknown) => ({ error: String(err) })),
  );
  const mem = await phase('3. memory…', memory);
  const stream = await phase('7. streamed answer: first token → first visible words (Telegram, Slack, Discord)…', streamLatency);
  const model = await startFakeOpenAI();
  let over, scale, cluster;
  try {
    model.setHandler(() => ({ content: 'ok' }));
    over = await phase('4. pipeline vs the BullMQ floor…', () => overhead(model.baseURL));
    scale = await phase('5. scale-out…', () => scaleOut(model.baseURL));
    cluster = await phase('5b. Redis Cluster…', () => measureCluster(model.baseURL, SIZE.cluster).catch((err: unknown) => ({ error: String(err) })));
  } finally {
    await model.close();
  }

  const results = {
    date: new Date().toISOString(),
    machine,
    quick: QUICK,
    ...tg,
    startupWithBuild,
    mcpPrompt,
    skillPrompt,
    memoryPrompt,
    redisPerTurn,
    memory: mem,
    overhead: over,
    scaleOut: scale,
    cluster,
    streamLatency: stream,
  };
  // A quick run's figures are not the benchmark's: bench/results.json keeps the last full run.
  if (!QUICK) await writeFile(fileURLToPath(new URL('./results.json', import.meta.url)), `${JSON.stringify(results, null, 2)}\n`);
  printTable(results);
}

function printTable(r: Record<string, any>) {
  const rows: [string, string, string][] = [
    ['warm two-hop turn p50 / p95 (Telegram)', `${r.turn.warm.p50Ms} / ${r.turn.warm.p95Ms} ms`, '≤ 150 ms p50'],
    ['cold (first) turn', `${r.turn.coldMs} ms`, ''],
    [
      `start-up to ready (median of ${r.startup.runsMs.length})`,
      r.quick ? `${r.startup.medianMs} ms (quick: from the sources with tsx)` : `${r.startup.medianMs} ms (dev mode with tsx: ${r.startup.devModeMs} ms)`,
      '≤ 3,000 ms',
    ],
    ...startupRows(r.startupWithBuild),
    ['idle RSS gateway / worker', `${r.memory.idleMiB.gateway} / ${r.memory.idleMiB.worker} MiB`, '≤ 150 MiB each'],
    [
      `peak RSS after ${r.memory.afterSessions} sessions`,
      `${r.memory.peakMiB.gateway} / ${r.memory.peakMiB.worker} MiB; ${r.memory.turnsPerSecond} turns/s, unanswered ${r.memory.unanswered}`,
      '',
    ],
    [
      'first model request',
      `${r.prompt.firstRequest.total} tokens (system ${r.prompt.firstRequest.system}, tools ${r.prompt.firstRequest.tools})`,
      '≤ 1,500 tokens',
    ],
    ['all three requests', `${r.prompt.allRequests} tokens, ${r.prompt.bytesSent} bytes`, ''],
    [
      `tool schemas: built-in / + 2 MCP servers (${r.mcpPrompt.mcpTools} tools)`,
      `${r.mcpPrompt.builtIn} / ${r.mcpPrompt.withMcp} tokens (first request ≈ ${r.prompt.firstRequest.total - r.prompt.firstRequest.tools + r.mcpPrompt.withMcp})`,
      '',
    ],
    ...skillRows(r.skillPrompt),
    ...memoryRows(r.memoryPrompt),
    ...redisRows(r.redisPerTurn),
    ...streamRows(r.streamLatency),
  ];
  rows.push(...overheadRows(r.overhead));
  for (const s of r.scaleOut)
    rows.push([
      `scale-out: ${s.workers} worker process(es)`,
      `${s.perSecond} msg/s${s.vsOneWorker === null ? '' : ` (×${s.vsOneWorker})`}, lost ${s.lost}`,
      '',
    ]);
  if ('error' in r.cluster) rows.push(['Redis Cluster (3 nodes)', `not measured: ${r.cluster.error}`, '']);
  else
    rows.push([
      'Redis Cluster (3 nodes)',
      `${r.cluster.perSecond} msg/s, p50 ${r.cluster.p50} ms, lost ${r.cluster.lost}, keys in slot ${r.cluster.slot} only: ${r.cluster.oneSlot}`,
      '',
    ]);
  printRows(rows);
}

function redisRows(x: Awaited<ReturnType<typeof measureRedisPerTurn>> | { error: string }): [string, string, string][] {
  if ('error' in x) return [['Redis commands per two-hop turn', `not measured: ${x.error}`, '']];
  return [
    [
      `Redis commands per two-hop turn (model → tool → model → reply; ${x.turns} turns, idle subtracted)`,
      `${x.commandsPerTurn} commands (${x.scriptCallsPerTurn} of them script calls, whose inner commands are counted too)`,
      '',
    ],
    ['Redis bytes per two-hop turn, in / out', `${x.bytesPerTurn} bytes (${x.bytesInPerTurn} in / ${x.bytesOutPerTurn} out)`, ''],
    ...x.top.map((t, i): [string, string, string] => [`  ${i + 1}. ${t.command}`, `${t.perTurn} per turn`, '']),
    ['  idle traffic of the same processes (subtracted)', `${x.idleCommandsPerSecond} commands/s over ${x.intervalMs} ms`, ''],
  ];
}

function overheadRows(rows: Awaited<ReturnType<typeof overhead>>): [string, string, string][] {
  return rows.flatMap((o): [string, string, string][] => [
    [
      `pipeline vs floor at ${o.concurrency} sessions: p50`,
      `${o.pipeline.p50} vs ${o.floor.p50} ms (×${o.p50Ratio}); p99 ${o.pipeline.p99} vs ${o.floor.p99}`,
      '',
    ],
    [`  vs floor + the model call at ${o.concurrency}`, `${o.pipeline.p50} vs ${o.floor.p50} + ${o.modelCall.p50} ms (×${o.p50VsFloorAndModel})`, '≤ ×2'],
    [`  throughput at ${o.concurrency}`, `${o.pipeline.perSecond} vs ${o.floor.perSecond} msg/s (×${o.throughputRatio}); lost ${o.pipeline.lost}`, '≥ ×0.5'],
    [`  the model call alone at ${o.concurrency}`, `p50 ${o.modelCall.p50} ms, ${o.modelCall.perSecond} calls/s`, ''],
  ]);
}

function skillRows(s: Awaited<ReturnType<typeof skillPromptCost>>): [string, string, string][] {
  return [
    [
      `first request, system + tools: no skills / ${s.skills} skills listed / their bodies inlined`,
      `${s.none} / ${s.listed} / ${s.inlined} tokens (≈ ${s.perSkill} per skill, load_skill ${s.loadSkillTool})`,
      '≤ SKILLS_PROMPT_TOKENS (1,500) for the list',
    ],
  ];
}

function memoryRows(m: Awaited<ReturnType<typeof memoryCost>>): [string, string, string][] {
  return [
    [
      `first request with ${m.entries} memory entries: the memory block / the three memory tools' schemas`,
      `${m.block} / ${m.tools} tokens`,
      'block ≤ MEMORY_PROMPT_TOKENS (400)',
    ],
    [`recall over ${m.entries} entries (real Redis), p50 / p95`, `${m.recallP50Ms} / ${m.recallP95Ms} ms`, ''],
  ];
}

function printRows(rows: [string, string, string][]) {
  const width = Math.max(...rows.map((x) => x[0].length));
  process.stdout.write(`\n${'measure'.padEnd(width)} | result | target\n${'-'.repeat(width)}-|--------|-------\n`);
  for (const [a, b, c] of rows) process.stdout.write(`${a.padEnd(width)} | ${b} | ${c}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    if (Object.keys(measured).length) process.stderr.write(`measured before the failure: ${JSON.stringify(measured)}\n`);
    process.exit(1);
  },
);
