import { constants } from 'node:os';
import { z } from 'zod';
import { CommandStartError, execCommand, type CommandOutcome } from './exec.js';
import { OUTPUT_CAP_BYTES } from './output-cap.js';
import { commandSpec, hostLayout, SANDBOX_WORKSPACE, type ExecOptions } from './sandbox.js';
import { ToolError, type Tool } from './types.js';
import type { Workspace } from './workspace.js';

export type { ExecOptions };

export const DEFAULT_TIMEOUT_S = 60;
const OUTER_DEADLINE_SLACK_S = 15;

const schema = z.object({
  command: z.string().min(1).describe('Run with bash -c'),
  timeout_s: z.int().min(1).optional().describe(`Seconds before it is killed; default ${DEFAULT_TIMEOUT_S}`),
});

/** Runs shell commands in the workspace: side-effecting, so never simply run again on a resume. */
export function createRunCommandTool(ws: Workspace, options: ExecOptions): Tool<typeof schema> {
  return {
    name: 'run_command',
    description: describeTool(options),
    schema,
    // The command kills itself at its timeout_s; this outer deadline only catches a stuck kill.
    timeoutMs: (options.maxTimeoutS + OUTER_DEADLINE_SLACK_S) * 1000,
    async execute({ command, timeout_s }, { signal }) {
      signal.throwIfAborted();
      const seconds = Math.min(timeout_s ?? DEFAULT_TIMEOUT_S, options.maxTimeoutS);
      const mounts = ws.readOnlyMounts.map((m) => ({ host: m.dir, target: `/${m.at}` }));
      const spec = commandSpec(options, await hostLayout(), await ws.realRoot(), command, mounts);
      let outcome: CommandOutcome;
      try {
        outcome = await execCommand(spec, { timeoutMs: seconds * 1000, signal });
      } catch (err) {
        if (err instanceof CommandStartError) throw new ToolError(startFailure(err));
        throw err;
      }
      const lines = [outcome.output === '' ? '(no output)' : outcome.output.replace(/\n$/, '')];
      if (timeout_s !== undefined && timeout_s > seconds) lines.push(`[timeout_s ${timeout_s} is over the limit; it ran with ${seconds} s]`);
      lines.push(ending(outcome, seconds));
      return lines.join('\n');
    },
  };
}

function describeTool(options: ExecOptions): string {
  const where =
    options.sandbox === 'bwrap' ? `in the workspace (${SANDBOX_WORKSPACE}), sandboxed, ${options.network ? 'with' : 'no'} network` : 'in the workspace folder';
  return `Run a shell command (bash -c) ${where}. Returns stdout+stderr (${OUTPUT_CAP_BYTES / 1000} KB max, head and tail) and the exit code. Timeout at most ${options.maxTimeoutS} s.`;
}

function ending(outcome: CommandOutcome, seconds: number): string {
  if (outcome.timedOut) return `[timed out after ${seconds} s: the command and everything it started were killed]`;
  if (outcome.signal !== null) return `[killed by signal ${outcome.signal}]`;
  // A shell (and bwrap) reports a child killed by signal N as exit code 128 + N.
  const code = outcome.exitCode ?? 0;
  const name = code > 128 ? Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0] : undefined;
  return `[exit code ${code}${name ? ` (${name})` : ''}]`;
}

function startFailure(err: CommandStartError): string {
  if (err.code !== 'ENOENT') return err.message;
  return err.file === 'bwrap'
    ? 'commands cannot run: bubblewrap (bwrap) is not installed on this worker. Tell the user; an operator must install it or set EXEC_SANDBOX=none.'
    : `commands cannot run: ${err.file} is not installed on this worker.`;
}
