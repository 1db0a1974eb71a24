// `npm start` from spawn to its "ready" log line (Redis, a worker, the gateway with Telegram polling
// against the fake Telegram server), build step included, in a throwaway copy of the project (src/,
// configs, scripts/, node_modules linked) so the repo's own dist/ is never deleted under anyone:
//   clean:   the first start after `rm -rf dist` (a full build),
//   restart: the next starts with nothing changed (scripts/build.mjs finds dist/ up to date),
//   nodeAlone: `node dist/cli/main.js all` with no npm and no build step (the floor of a restart),
//   tscEveryStart: for comparison, a restart the way prestart used to be (`npm run -s build`, tsc
//   on every start, incremental but still loading the whole program).
import { cp, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../test/helpers/processes.js';
import { percentile, ratio } from './stats.js';
import { spawnTracked, stopGroup } from './children.js';

const COPIED = ['src', 'scripts', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];

async function copyProject(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sb-bench-start-'));
  for (const f of COPIED) await cp(join(REPO, f), join(dir, f), { recursive: true });
  await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
  await mkdir(join(dir, 'data'), { recursive: true });
  return dir;
}

/** Spawns the command in its own process group, resolves with the ms to the "ready" line, then stops the group. */
function timeToReady(cwd: string, command: string[], env: Record<string, string>, timeoutMs = 180_000): Promise<number> {
  const base: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };
  const t0 = performance.now();
  // detached: its own process group, which it leads (pgid = its pid), registered in children.ts.
  const child = spawnTracked(command[0]!, command.slice(1), { cwd, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let err = '';
  let out = '';
  // npm → sh → node: signal the group this spawn created (its own pid), never anything by name.
  const stop = () => stopGroup(child);
  return new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => void stop().then(() => reject(new Error(`no "ready" within ${timeoutMs} ms: ${err.slice(-2000)}`))), timeoutMs);
    let ready = false;
    const check = () => {
      if (ready || !err.includes('"msg":"ready"')) return;
      ready = true;
      const ms = performance.now() - t0;
      clearTimeout(timer);
      void stop().then(() => resolve(ms));
    };
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      check();
    });
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => {
      if (!err.includes('"msg":"ready"')) {
        clearTimeout(timer);
        // The leader is gone; what it started in its group may not be.
        void stop().then(() => reject(new Error(`exited ${code} before "ready": ${(err + out).slice(-2000)}`)));
      }
    });
  });
}

export interface StartupBuild {
  cleanMs: number;
  restartMs: number;
  restartRunsMs: number[];
  cleanOverRestart: number;
  tscEveryStartMs: number;
  tscEveryStartOverRestart: number;
  /** `node dist/cli/main.js all` alone, no npm, no build step: what the restart costs on top. */
  nodeAloneMs: number;
}

/** Quick mode: no build at all (a clean build alone takes longer than the whole quick bench); one `npm run dev` (npm → sh → node with tsx) in the repo, through the same start-and-stop path. */
export interface StartupQuick {
  quick: true;
  npmRunDevMs: number;
}

export async function measureStartupBuild(env: Record<string, string>, restarts: number, quick = false): Promise<StartupBuild | StartupQuick> {
  const round = (v: number) => Math.round(v);
  // Dev mode writes nothing in the project: the repo itself (and tsx's cache of it) will do.
  if (quick) return { quick: true, npmRunDevMs: round(await timeToReady(REPO, ['npm', 'run', 'dev'], env)) };
  const dir = await copyProject();
  try {
    await rm(join(dir, 'dist'), { recursive: true, force: true });
    const cleanMs = await timeToReady(dir, ['npm', 'start'], env);
    const runs: number[] = [];
    for (let i = 0; i < restarts; i++) runs.push(await timeToReady(dir, ['npm', 'start'], env));
    const tscEveryStart: number[] = [];
    for (let i = 0; i < Math.min(restarts, 2); i++)
      tscEveryStart.push(await timeToReady(dir, ['sh', '-c', 'npm run -s build && exec node dist/cli/main.js all'], env));
    const direct: number[] = [];
    for (let i = 0; i < Math.min(restarts, 3); i++) direct.push(await timeToReady(dir, [process.execPath, 'dist/cli/main.js', 'all'], env));
    const restartMs = percentile(runs, 50);
    const oldMs = percentile(tscEveryStart, 50);
    return {
      cleanMs: round(cleanMs),
      restartMs: round(restartMs),
      restartRunsMs: runs.map(round),
      cleanOverRestart: ratio(cleanMs, restartMs),
      tscEveryStartMs: round(oldMs),
      tscEveryStartOverRestart: ratio(oldMs, restartMs),
      nodeAloneMs: round(percentile(direct, 50)),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
