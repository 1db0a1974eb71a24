// npm run bench: what the pipeline costs on top of BullMQ and the model, side by side with the
// floor, in one run. Prints a table and writes bench/results.json. Method: docs/benchmarks.md.
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startFakeOpenAI } from '../test/fakes/openai-server.js';
import { waitFor } from '../test/helpers/processes.js';
import { dropPrefix, testRedis } from '../test/helpers/redis.js';
import { measureFloor, measureModelCall, measurePipeline, type LoadShape } from './overhead.js';
import { requestBytes, requestTokens } from './prompt-tokens.js';
import { dmAndWait, rss, seedTwoHop, startRole, startTelegramRig, TWO_HOP_QUESTION } from './rig.js';
import { percentile, ratio } from './stats.js';
import { measureCluster } from './cluster.js';
import { mcpPromptCost } from './mcp-tokens.js';
import { measureStartupBuild } from './startup-build.js';

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUICK = process.argv.includes('--quick');
/** `npm run bench -- --startup`: only the npm start figures (clean build vs restart), printed, results.json untouched. */
const STARTUP_ONLY = process.argv.includes('--startup');
const round = (v: number) => Math.round(v * 10) / 10;
const log = (line: string) => process.stderr.write(`${line}\n`);
let prefixSeq = 0;
const freshPrefix = (what: string) => `{bench-${what}-${process.pid}-${++prefixSeq}}`;

async function telegramTurns() {
  const prefix = freshPrefix('tg');
  const rig = await startTelegramRig(REDIS_URL, prefix);
  const starts: number[] = [];
  try {
    // Start-up: process start → /readyz 200 (Redis, a worker, Telegram polling). Once in dev
    // mode (tsx compiling on the fly), then three times as `npm start` runs it.
    const dev = await startRole('all', rig.env, 'src/cli/main.ts');
    dev.proc.kill('SIGTERM');
    await dev.proc.exited;
    for (let i = 0; i < 3; i++) {
      const { proc, readyMs } = await startRole('all', rig.env);
      starts.push(readyMs);
      if (i < 2) {
        proc.kill('SIGTERM');
        await proc.exited;
        continue;
      }
      await seedTwoHop(rig, 1);
      const cold = await dmAndWait(rig, 1, TWO_HOP_QUESTION);
      const requests = rig.model.requests.slice(0, 3);
      const warm: number[] = [];
      const turns = QUICK ? 10 : 50;
      for (let chat = 2; chat < 2 + turns; chat++) {
        await seedTwoHop(rig, chat);
        warm.push(await dmAndWait(rig, chat, TWO_HOP_QUESTION));
      }
      proc.kill('SIGTERM');
      await proc.exited;
      const tokens = requests.map(requestTokens);
      return {
        startup: { runsMs: starts.map(round), medianMs: round(percentile(starts, 50)), devModeMs: round(dev.readyMs) },
        turn: { coldMs: round(cold), warm: { n: warm.length, p50Ms: round(percentile(warm, 50)), p95Ms: round(percentile(warm, 95)) }, modelCallsPerTurn: requests.length },
        prompt: {
          firstRequest: tokens[0],
          allRequests: tokens.reduce((n, t) => n + t.total, 0),
          bytesSent: requests.reduce((n, r) => n + requestBytes(r), 0),
        },
      };
    }
    throw new Error('unreachable');
  } finally {
    await rig.close();
    const redis = testRedis();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  }
}

async function memory() {
  const prefix = freshPrefix('mem');
  const rig = await startTelegramRig(REDIS_URL, prefix);
  const sessions = QUICK ? 1_000 : 10_000;
  try {
    const worker = await startRole('worker', { ...rig.env, WORKER_CONCURRENCY: '32' });
    const gateway = await startRole('gateway', rig.env);
    await new Promise((r) => setTimeout(r, 2_000));
    const idle = { gateway: await rss(gateway.proc.pid), worker: await rss(worker.proc.pid) };
    const before = rig.tg.sent.length;
    for (let chat = 1; chat <= sessions; chat++) {
      const from = { id: 1_000_000 + chat, is_bot: false, first_name: 'Load' };
      rig.tg.pushUpdate({ message: rig.tg.message({ chat: { id: 1_000_000 + chat, type: 'private' }, from, text: `hello ${chat}` }) });
    }
    const t0 = performance.now();
    await waitFor(`${sessions} answers`, () => rig.tg.sent.length - before >= sessions, 600_000, 200);
    const seconds = (performance.now() - t0) / 1000;
    const after = { gateway: await rss(gateway.proc.pid), worker: await rss(worker.proc.pid) };
    for (const p of [gateway.proc, worker.proc]) p.kill('SIGTERM');
    await Promise.all([gateway.proc.exited, worker.proc.exited]);
    return { idleMiB: { gateway: idle.gateway.now, worker: idle.worker.now }, afterSessions: sessions, peakMiB: { gateway: after.gateway.peak, worker: after.worker.peak }, turnsPerSecond: round(sessions / seconds) };
  } finally {
    await rig.close();
    const redis = testRedis();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  }
}

async function overhead(modelUrl: string) {
  const shapes: LoadShape[] = QUICK
    ? [{ sessions: 1, perSession: 50 }, { sessions: 100, perSession: 3 }]
    : [{ sessions: 1, perSession: 200 }, { sessions: 100, perSession: 10 }, { sessions: 1_000, perSession: 2 }];
  const rows = [];
  for (const shape of shapes) {
    const floor = await measureFloor(REDIS_URL, shape, 1, shape.sessions);
    const modelCall = await measureModelCall(modelUrl, shape);
    const pipeline = await measurePipeline(REDIS_URL, modelUrl, shape, 1, shape.sessions);
    rows.push({ concurrency: shape.sessions, messages: shape.sessions * shape.perSession, floor, modelCall, pipeline, p50Ratio: ratio(pipeline.p50, floor.p50), throughputRatio: ratio(pipeline.perSecond, floor.perSecond) });
    log(`  overhead at ${shape.sessions}: pipeline p50 ${pipeline.p50} ms vs floor ${floor.p50} ms`);
  }
  return rows;
}

async function scaleOut(modelUrl: string) {
  const shape: LoadShape = QUICK ? { sessions: 100, perSession: 3 } : { sessions: 200, perSession: 5 };
  const rows = [];
  for (const workers of [1, 2, 4]) {
    const r = await measurePipeline(REDIS_URL, modelUrl, shape, workers, 50);
    rows.push({ workers, ...r });
    log(`  ${workers} worker(s): ${r.perSecond} msg/s`);
  }
  const base = rows[0]!.perSecond;
  return rows.map((r) => ({ ...r, vsOneWorker: ratio(r.perSecond, base) }));
}

/** npm start, build step included: first start after a clean dist/ vs a restart with nothing changed. */
async function startupBuild() {
  const prefix = freshPrefix('start');
  const rig = await startTelegramRig(REDIS_URL, prefix);
  try {
    return await measureStartupBuild(rig.env, QUICK ? 3 : 5);
  } finally {
    await rig.close();
    const redis = testRedis();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  }
}

function startupRows(s: Awaited<ReturnType<typeof measureStartupBuild>>): [string, string, string][] {
  return [
    ['npm start → "ready": first start after rm -rf dist', `${s.cleanMs} ms (full build)`, ''],
    [`npm start → "ready": restart, nothing changed (median of ${s.restartRunsMs.length})`, `${s.restartMs} ms (×${s.cleanOverRestart} faster than clean)`, '≈ 1,000 ms'],
    ['  restart with tsc on every start (the old prestart)', `${s.tscEveryStartMs} ms (×${s.tscEveryStartOverRestart} the restart)`, ''],
    ['  node dist/cli/main.js alone (no npm, no build step)', `${s.nodeAloneMs} ms`, ''],
  ];
}

async function main() {
  if (STARTUP_ONLY) {
    log('npm start: clean build vs restart…');
    const s = await startupBuild();
    process.stdout.write(`${JSON.stringify(s)}\n`);
    printRows(startupRows(s));
    return;
  }
  // Measure what `npm start` runs: the compiled build.
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('the build (scripts/build.mjs) failed');
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version };
  log(`bench on ${machine.cpus} cores, ${machine.memoryGiB} GiB, Node ${machine.node}${QUICK ? ' (quick)' : ''}`);
  log('1-2, 6. Telegram two-hop turns, start-up, prompt cost…');
  const tg = await telegramTurns();
  const mcpPrompt = await mcpPromptCost();
  log('1b. npm start: first start after a clean dist/ vs a restart with nothing changed…');
  const startupWithBuild = await startupBuild();
  log('3. memory…');
  const mem = await memory();
  const model = await startFakeOpenAI();
  model.setHandler(() => ({ content: 'ok' }));
  log('4. pipeline vs the BullMQ floor…');
  const over = await overhead(model.baseURL);
  log('5. scale-out…');
  const scale = await scaleOut(model.baseURL);
  log('5b. Redis Cluster…');
  const cluster = await measureCluster(model.baseURL, QUICK ? 200 : 1_000).catch((err: unknown) => ({ error: String(err) }));
  await model.close();

  const results = { date: new Date().toISOString(), machine, quick: QUICK, ...tg, startupWithBuild, mcpPrompt, memory: mem, overhead: over, scaleOut: scale, cluster };
  await writeFile(fileURLToPath(new URL('./results.json', import.meta.url)), `${JSON.stringify(results, null, 2)}\n`);
  printTable(results);
}

function printTable(r: Record<string, any>) {
  const rows: [string, string, string][] = [
    ['warm two-hop turn p50 / p95 (Telegram)', `${r.turn.warm.p50Ms} / ${r.turn.warm.p95Ms} ms`, '≤ 150 ms p50'],
    ['cold (first) turn', `${r.turn.coldMs} ms`, ''],
    ['start-up to ready (median of 3)', `${r.startup.medianMs} ms (dev mode with tsx: ${r.startup.devModeMs} ms)`, '≤ 3,000 ms'],
    ...startupRows(r.startupWithBuild),
    ['idle RSS gateway / worker', `${r.memory.idleMiB.gateway} / ${r.memory.idleMiB.worker} MiB`, '≤ 150 MiB each'],
    [`peak RSS after ${r.memory.afterSessions} sessions`, `${r.memory.peakMiB.gateway} / ${r.memory.peakMiB.worker} MiB`, ''],
    ['first model request', `${r.prompt.firstRequest.total} tokens (system ${r.prompt.firstRequest.system}, tools ${r.prompt.firstRequest.tools})`, '≤ 1,500 tokens'],
    ['all three requests', `${r.prompt.allRequests} tokens, ${r.prompt.bytesSent} bytes`, ''],
    [`tool schemas: built-in / + 2 MCP servers (${r.mcpPrompt.mcpTools} tools)`, `${r.mcpPrompt.builtIn} / ${r.mcpPrompt.withMcp} tokens (first request ≈ ${r.prompt.firstRequest.total - r.prompt.firstRequest.tools + r.mcpPrompt.withMcp})`, ''],
  ];
  for (const o of r.overhead) {
    rows.push([`pipeline vs floor at ${o.concurrency} sessions: p50`, `${o.pipeline.p50} vs ${o.floor.p50} ms (×${o.p50Ratio}); p99 ${o.pipeline.p99} vs ${o.floor.p99}`, '≤ ×2']);
    rows.push([`  throughput at ${o.concurrency}`, `${o.pipeline.perSecond} vs ${o.floor.perSecond} msg/s (×${o.throughputRatio}); lost ${o.pipeline.lost}`, '≥ ×0.5']);
    rows.push([`  the model call alone at ${o.concurrency}`, `p50 ${o.modelCall.p50} ms, ${o.modelCall.perSecond} calls/s`, '']);
  }
  for (const s of r.scaleOut) rows.push([`scale-out: ${s.workers} worker process(es)`, `${s.perSecond} msg/s (×${s.vsOneWorker}), lost ${s.lost}`, '']);
  if ('error' in r.cluster) rows.push(['Redis Cluster (3 nodes)', `not measured: ${r.cluster.error}`, '']);
  else rows.push(['Redis Cluster (3 nodes)', `${r.cluster.perSecond} msg/s, p50 ${r.cluster.p50} ms, lost ${r.cluster.lost}, keys in slot ${r.cluster.slot} only: ${r.cluster.oneSlot}`, '']);
  printRows(rows);
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
    process.exit(1);
  },
);
