// Every process the bench starts is registered here by its own pid (or, for `npm start`'s
// npm → sh → node chain, by the process group it leads), so that every way out of the bench
// stops it: each phase stops its processes in a `finally`, and whatever is still registered when
// the bench process exits (an exception, process.exit, SIGINT/SIGTERM/SIGHUP) is killed by pid
// from the exit handler. Nothing is ever signalled by name. (The MCP servers of the prompt-cost
// phase are the SDK's children: closed by the phase, and they exit when their stdin closes.)
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { spawnNode, waitFor, PROCESS_READY_MS, type Spawned } from '../test/helpers/processes.js';

interface Entry {
  what: string;
  /** Signal the process group `-pid` (a child spawned `detached`, the leader of its own group). */
  group: boolean;
}

const live = new Map<number, Entry>();
const log = (line: string) => process.stderr.write(`${line}\n`);

/** BENCH_LOG_PIDS=1: one stderr line per process started, so a caller can check afterwards that none outlived the bench (test/bench/quick.test.ts does). */
const LOG_PIDS = process.env.BENCH_LOG_PIDS === '1';

export function track(pid: number | undefined, what: string, group = false): void {
  if (pid === undefined) throw new Error(`${what} did not start (no pid)`);
  live.set(pid, { what, group });
  if (LOG_PIDS) log(`bench started ${group ? 'group' : 'pid'} ${pid}: ${what}`);
}

export function untrack(pid: number | undefined): void {
  if (pid !== undefined) live.delete(pid);
}

function signal(pid: number, entry: Entry, sig: NodeJS.Signals): void {
  try {
    process.kill(entry.group ? -pid : pid, sig);
  } catch {
    /* already gone */
  }
}

/** `node <script> …` (tsx for .ts) from the repo root, registered from the moment it exists. */
export function spawnNodeTracked(script: string, args: string[], env: Record<string, string>): Spawned {
  const p = spawnNode(script, args, env);
  track(p.pid, `node ${script} ${args.join(' ')}`);
  void p.exited.then(() => untrack(p.pid));
  return p;
}

/** Any other command (redis-server), registered; unregistered when it exits. */
export function spawnTracked(command: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(command, args, options);
  // A command that cannot start (not on the PATH) has no pid: track() throws that; the later
  // 'error' event must not become an uncaught exception.
  child.once('error', () => undefined);
  track(child.pid, `${command} ${args.join(' ')}`, options.detached === true);
  // A group stays registered until its stopper says so (its leader can exit before the rest).
  if (options.detached !== true) child.once('exit', () => untrack(child.pid));
  return child;
}

/** Resolves when the child has exited (at once if it already has). */
export function exitOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

/** SIGTERM by pid, wait up to `graceMs` for the exit, then SIGKILL. */
export async function stop(p: Spawned | undefined, graceMs = 15_000): Promise<void> {
  if (!p) return;
  p.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const gone = await Promise.race([p.exited.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), graceMs)))]);
  clearTimeout(timer);
  if (!gone) {
    log(`  pid ${p.pid} did not stop within ${graceMs} ms of SIGTERM: SIGKILL`);
    p.kill('SIGKILL');
    await p.exited;
  }
  untrack(p.pid);
}

export async function stopAll(procs: readonly (Spawned | undefined)[], graceMs?: number): Promise<void> {
  await Promise.all(procs.map((p) => stop(p, graceMs)));
}

/** Same for a plain ChildProcess (redis-server). */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    try {
      process.kill(child.pid, 'SIGTERM');
    } catch {
      /* gone */
    }
    let timer: NodeJS.Timeout | undefined;
    const gone = await Promise.race([exitOf(child).then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), graceMs)))]);
    clearTimeout(timer);
    if (!gone) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      await exitOf(child);
    }
  }
  untrack(child.pid);
}

/**
 * Stops the process group a `detached` spawnTracked child leads (npm → sh → node): SIGTERM to
 * the group, wait for the leader and for the group to be empty (up to `graceMs`), then SIGKILL
 * the group. Unregisters it.
 */
export async function stopGroup(child: ChildProcess, graceMs = 15_000): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const groupAlive = () => {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
  const deadline = Date.now() + graceMs;
  await Promise.race([exitOf(child), new Promise((r) => setTimeout(r, graceMs))]);
  while (groupAlive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (groupAlive()) {
    log(`  process group ${pid} still running ${graceMs} ms after SIGTERM: SIGKILL`);
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    await exitOf(child);
  }
  untrack(pid);
}

/** A Switchboard worker process from the sources (like test/helpers' spawnWorker), registered before it is ready and stopped here if it never is. */
export async function spawnWorkerTracked(env: Record<string, string>): Promise<Spawned> {
  const worker = spawnNodeTracked('src/cli/main.ts', ['worker'], { LOG_LEVEL: 'info', ...env });
  try {
    await waitFor(
      'worker ready',
      () =>
        worker.stderr().includes('"worker ready"') ||
        (worker.child.exitCode !== null && Promise.reject(new Error(`worker exited ${worker.child.exitCode}: ${worker.stderr().slice(-2000)}`))),
      PROCESS_READY_MS,
    );
  } catch (err) {
    await stop(worker, 2_000);
    throw err;
  }
  return worker;
}

/** Starts n workers; if any fails to get ready, all of them are stopped before the error goes on. */
export async function spawnWorkersTracked(n: number, env: Record<string, string>): Promise<Spawned[]> {
  const settled = await Promise.allSettled(Array.from({ length: n }, () => spawnWorkerTracked(env)));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  const ok = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  if (failed) {
    await stopAll(ok, 2_000);
    throw failed.reason;
  }
  return ok;
}

/** Async clean-ups (a phase's keys in the shared Redis) for an aborted run, whose finally blocks never run. */
const aborts = new Set<() => Promise<void>>();

/** Registers a clean-up for SIGINT/SIGTERM/SIGHUP; call the returned function when the phase has cleaned up itself. */
export function onAbort(cleanup: () => Promise<void>): () => void {
  aborts.add(cleanup);
  return () => aborts.delete(cleanup);
}

let installed = false;

/**
 * The last line of defence, installed once at bench start: on exit (normal, exception,
 * process.exit) every registered pid still alive gets SIGKILL; on SIGINT/SIGTERM/SIGHUP or an
 * uncaught exception the
 * children get SIGTERM and, with the onAbort clean-ups, up to 5 s in all, then the bench exits
 * 128+n (and the exit handler SIGKILLs what is left).
 */
export function installExitHandlers(): void {
  if (installed) return;
  installed = true;
  process.on('exit', () => {
    if (live.size === 0) return;
    log(`bench: killing ${live.size} process(es) it started that were still running: ${[...live].map(([pid, e]) => `${pid} (${e.what})`).join(', ')}`);
    for (const [pid, entry] of live) signal(pid, entry, 'SIGKILL');
    live.clear();
  });
  let aborting = false;
  const onSignal = (sig: string, code: number) => {
    if (aborting) return;
    aborting = true;
    log(`bench: ${sig}, stopping the ${live.size} process(es) it started`);
    for (const [pid, entry] of live) signal(pid, entry, 'SIGTERM');
    const deadline = Date.now() + 5_000;
    const cleanUp = () => {
      const timer = setTimeout(() => process.exit(code), Math.max(0, deadline - Date.now()));
      void Promise.allSettled([...aborts].map((f) => f())).then(() => {
        clearTimeout(timer);
        process.exit(code);
      });
    };
    const check = () => {
      for (const [pid, entry] of live) {
        try {
          process.kill(entry.group ? -pid : pid, 0);
        } catch {
          live.delete(pid);
        }
      }
      if (live.size === 0 || Date.now() > deadline) cleanUp();
      else setTimeout(check, 100);
    };
    check();
  };
  process.once('SIGINT', () => onSignal('SIGINT', 130));
  process.once('SIGTERM', () => onSignal('SIGTERM', 143));
  process.once('SIGHUP', () => onSignal('SIGHUP', 129));
  // An exception nothing caught (a callback's, outside every phase's try): the same way out, exit 1.
  const onCrash = (err: unknown) => {
    log(`bench crashed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    onSignal('uncaught exception', 1);
  };
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
}
