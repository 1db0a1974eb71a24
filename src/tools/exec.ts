import { spawn } from 'node:child_process';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { OutputCap } from './output-cap.js';
import { commandSpec, hostLayout, type CommandSpec, type ExecOptions } from './sandbox.js';

/** How a command ended. `output` (stdout and stderr in arrival order) is already capped for the model. */
export interface CommandOutcome {
  output: string;
  /** null when the process was killed by a signal. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
}

/** The program could not be started at all; `code` is the errno code, e.g. ENOENT when it is not installed. */
export class CommandStartError extends Error {
  override readonly name = 'CommandStartError';
  constructor(
    readonly file: string,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** After the command exits, how long a process that left its group (only possible without bwrap) may hold the output open. */
const PIPE_GRACE_MS = 500;

/**
 * Runs `spec` as the leader of a process group of its own and settles only once it is gone. A
 * timeout or `signal` kills the whole group with SIGKILL (with bwrap that ends the sandbox's pid
 * namespace, so everything started inside); so does the command's own exit, so no background job
 * outlives it. An abort rejects with the signal's reason, after the process is gone.
 */
export function execCommand(spec: CommandSpec, { timeoutMs, signal }: { timeoutMs: number; signal: AbortSignal }): Promise<CommandOutcome> {
  return new Promise((resolve, reject) => {
    const output = new OutputCap();
    const child = spawn(spec.file, spec.args, { cwd: spec.cwd, env: spec.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let timedOut = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let pipeTimer: NodeJS.Timeout | undefined;

    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // ESRCH: every process of the group is gone already.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    signal.addEventListener('abort', killGroup, { once: true });
    // Aborted while the command was being prepared: the listener would never fire.
    if (signal.aborted) killGroup();
    const finish = () => {
      clearTimeout(timer);
      clearTimeout(pipeTimer);
      signal.removeEventListener('abort', killGroup);
    };

    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    child.once('error', (err) => {
      finish();
      const code = (err as NodeJS.ErrnoException).code;
      reject(new CommandStartError(spec.file, code, `cannot start ${spec.file}: ${err.message}`));
    });
    child.once('exit', (code, exitSignal) => {
      exit = { code, signal: exitSignal };
      killGroup();
      pipeTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, PIPE_GRACE_MS);
    });
    child.once('close', () => {
      // No exit: the process never started, and 'error' has rejected.
      if (exit === undefined) return;
      finish();
      if (signal.aborted) reject(signal.reason);
      else resolve({ output: output.text(), exitCode: exit.code, signal: exit.signal, timedOut });
    });
  });
}

/** One line for the worker's start-up: an error means commands cannot run as configured. */
export type ExecRuntimeCheck = { ok: true; warning?: string } | { ok: false; error: string };

const CHECK_TIMEOUT_MS = 10_000;

const INSTALL_HINT =
  'EXEC_SANDBOX=bwrap needs bubblewrap, and bwrap is not on the PATH: install it (apt-get install bubblewrap, apk add bubblewrap, dnf install bubblewrap) or set EXEC_SANDBOX=none to run commands on the host without a sandbox';
const USERNS_HINT =
  'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 kernel.apparmor_restrict_unprivileged_userns=0; in Docker the security_opt of docker-compose.yml) or set EXEC_SANDBOX=none';

/** Whether commands can run as `options` say: bwrap runs a trivial command in a sandbox like a real one. */
export async function checkExecRuntime(options: ExecOptions): Promise<ExecRuntimeCheck> {
  if (options.sandbox === 'none') {
    return { ok: true, warning: 'EXEC_SANDBOX=none: commands run on the host without a sandbox, with every file, process and network the worker can reach' };
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'switchboard-exec-check-'));
  try {
    const spec = commandSpec(options, await hostLayout(), await realpath(dir), 'true');
    const outcome = await execCommand(spec, { timeoutMs: CHECK_TIMEOUT_MS, signal: new AbortController().signal });
    if (outcome.timedOut)
      return { ok: false, error: `EXEC_SANDBOX=bwrap: a trivial command did not finish in its sandbox within ${CHECK_TIMEOUT_MS / 1000} s` };
    if (outcome.exitCode !== 0) {
      const why = outcome.output.split('\n')[0]!.trim() || `exit code ${outcome.exitCode ?? outcome.signal}`;
      return { ok: false, error: `EXEC_SANDBOX=bwrap: bubblewrap cannot run a command here (${why}): ${hintFor(why)}` };
    }
  } catch (err) {
    if (err instanceof CommandStartError && err.code === 'ENOENT') return { ok: false, error: INSTALL_HINT };
    return { ok: false, error: `EXEC_SANDBOX=bwrap: ${(err as Error).message}` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  if (process.getuid?.() === 0) {
    // The kernel exempts uid 0 from RLIMIT_NPROC, also inside a user namespace mapped to it.
    return {
      ok: true,
      warning:
        'the worker runs as root: the kernel applies no process cap to root, so a fork bomb in a command is stopped only by its timeout; run the worker as an unprivileged user (the Docker image does)',
    };
  }
  return { ok: true };
}

/** What to do about bwrap's own error line. */
function hintFor(bwrapError: string): string {
  if (bwrapError.includes('Unknown option'))
    return 'this bubblewrap is too old: commands need 0.8 or later (for --disable-userns): upgrade bubblewrap (Debian 12 and Ubuntu 24.04 ship 0.8 or later) or set EXEC_SANDBOX=none';
  // bwrap set the sandbox up, but found no bash or prlimit in it.
  if (bwrapError.includes('execvp')) return 'commands need bash and prlimit (util-linux) under /usr';
  return USERNS_HINT;
}
