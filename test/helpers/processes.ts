import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface Spawned {
  child: ChildProcess;
  pid: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  /** Signals this process by its own pid (never by name). */
  kill(signal?: NodeJS.Signals): void;
}

/** Starts `node [--import tsx] <script> args…` (tsx for .ts files) from the repo root with a clean, explicit environment. */
export function spawnNode(script: string, args: string[], env: Record<string, string>): Spawned {
  const base: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...loader, script, ...args], { cwd: REPO, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    exited,
    kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, signal);
    },
  };
}

export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** How long a spawned process may take to be ready: a cold start imports every SDK from disk, much slower beside other test files on 2 cores. */
export const PROCESS_READY_MS = 60_000;

/** Starts a worker process and waits for its "worker ready" log line. */
export async function spawnWorker(env: Record<string, string>): Promise<Spawned> {
  const worker = spawnNode('src/cli/main.ts', ['worker'], { LOG_LEVEL: 'info', ...env });
  try {
    await waitFor(
      'worker ready',
      () => worker.stderr().includes('"worker ready"') || (worker.child.exitCode !== null && Promise.reject(new Error(`worker exited: ${worker.stderr()}`))),
      PROCESS_READY_MS,
    );
  } catch (err) {
    // Not handed to the caller, so stopped here: a worker that starts late must not outlive its test.
    worker.kill('SIGKILL');
    throw err;
  }
  return worker;
}
