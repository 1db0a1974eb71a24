// `npm run bench -- --quick` as a child process: every phase runs (a handful of turns each, the
// product from the sources), the bench exits 0, prints a figure for every phase, leaves
// bench/results.json alone, and leaves no process it started running. Nothing about the figures
// themselves is asserted: on a loaded 2-core machine they mean little; that the rig works is the
// point (it was broken for a while and nothing noticed).
import { spawnSync } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { REPO, spawnNode, type Spawned } from '../helpers/processes.js';
import { REDIS_URL } from '../helpers/redis.js';

const hasRedisServer = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

let bench: Spawned | undefined;

afterEach(async () => {
  // A bench still running (the test timed out): SIGTERM lets it stop its own children by pid.
  if (bench && bench.child.exitCode === null && bench.child.signalCode === null) {
    bench.kill('SIGTERM');
    const timer = setTimeout(() => bench?.kill('SIGKILL'), 10_000);
    await bench.exited;
    clearTimeout(timer);
  }
});

function alive(pid: number, group: boolean): boolean {
  try {
    process.kill(group ? -pid : pid, 0);
    return true;
  } catch {
    return false;
  }
}

it('the quick bench runs every phase, prints its figures and leaves nothing running', async () => {
  const results = join(REPO, 'bench/results.json');
  const before = (await stat(results)).mtimeMs;
  const t0 = performance.now();
  bench = spawnNode('bench/run.ts', ['--quick'], { BENCH_REDIS_URL: REDIS_URL, BENCH_LOG_PIDS: '1' });
  const code = await bench.exited;
  const out = bench.stdout();
  const err = bench.stderr();
  const seconds = Math.round((performance.now() - t0) / 1000);
  expect(code, `bench exited ${code} after ${seconds} s:\n${err.slice(-4000)}`).toBe(0);

  const figure = '[0-9][0-9.,]*';
  const rows: [string, RegExp][] = [
    ['warm two-hop turn', new RegExp(`warm two-hop turn p50 / p95 \\(Telegram\\) +\\| ${figure} / ${figure} ms`)],
    ['cold turn', new RegExp(`cold \\(first\\) turn +\\| ${figure} ms`)],
    ['start-up', new RegExp(`start-up to ready \\(median of 1\\) +\\| ${figure} ms`)],
    ['npm run dev', new RegExp(`npm run dev → "ready".* +\\| ${figure} ms`)],
    ['memory', new RegExp(`idle RSS gateway / worker +\\| ${figure} / ${figure} MiB`)],
    ['memory load', new RegExp(`peak RSS after 50 sessions +\\| ${figure} / ${figure} MiB; ${figure} turns/s, unanswered 0`)],
    ['prompt', new RegExp(`first model request +\\| ${figure} tokens`)],
    ['MCP schemas', new RegExp(`tool schemas: built-in / \\+ 2 MCP servers .*\\| ${figure} / ${figure} tokens`)],
    ['pipeline vs floor', new RegExp(`pipeline vs floor at 5 sessions: p50 +\\| ${figure} vs ${figure} ms`)],
    ['throughput', new RegExp(`throughput at 5 +\\| ${figure} vs ${figure} msg/s .*lost 0`)],
    ['scale-out', new RegExp(`scale-out: 2 worker process\\(es\\) +\\| ${figure} msg/s, lost 0`)],
    ...['Telegram', 'Slack', 'Discord'].map((p): [string, RegExp] => [
      `streamed answer on ${p}`,
      new RegExp(
        `streamed answer: first token → first visible words, p50 / max \\(${p}, 2 answers\\) +\\| ${figure} / ${figure} ms \\(model to 80 chars ${figure} / ${figure}, then the adapter ${figure} / ${figure}`,
      ),
    ]),
  ];
  if (hasRedisServer) {
    rows.push(
      ['Redis commands per turn', new RegExp(`Redis commands per two-hop turn .*\\| ${figure} commands`)],
      ['Redis bytes per turn', new RegExp(`Redis bytes per two-hop turn, in / out +\\| ${figure} bytes \\(${figure} in / ${figure} out\\)`)],
      ['top Redis command', new RegExp(` 1\\. [a-z_|]+ +\\| ${figure} per turn`)],
      ['Redis Cluster', new RegExp(`Redis Cluster \\(3 nodes\\) +\\| ${figure} msg/s, p50 ${figure} ms, lost 0`)],
    );
  }
  for (const [phase, row] of rows) expect(out, `no figure for ${phase} in:\n${out}`).toMatch(row);
  expect(out).not.toContain('NaN');

  // Quick figures are not the benchmark's: results.json keeps the last full run.
  expect((await stat(results)).mtimeMs).toBe(before);

  // Every phase stopped its own processes (the exit handler had nothing left to kill), and none
  // of them is still running.
  expect(err).not.toMatch(/bench: killing \d+ process/);
  const started = [...err.matchAll(/^bench started (pid|group) (\d+): (.*)$/gm)].map((m) => ({ group: m[1] === 'group', pid: Number(m[2]), what: m[3] }));
  expect(started.length).toBeGreaterThan(5);
  expect(started.filter((s) => alive(s.pid, s.group))).toEqual([]);
}, 300_000);
