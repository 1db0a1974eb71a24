import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { Config } from '../../config/config.js';
import { ConfigError } from '../../lib/config-error.js';
import { createLogger } from '../../log.js';
import { checkExecRuntime } from '../../tools/exec.js';
import { loadMcpConfig, McpRegistry } from '../../tools/mcp/index.js';
import { Workspace } from '../../tools/workspace.js';
import { fail, ok, skip, type CheckResult } from '../types.js';

/** WORKSPACE_ROOT exists (or can be made) and takes a file. */
export async function checkWorkspace(root: string): Promise<CheckResult> {
  const name = 'workspace';
  const existed = await stat(root).then(
    (s) => s.isDirectory(),
    () => false,
  );
  const probe = `.switchboard-doctor-${randomUUID()}`;
  try {
    // Through the workspace write API, as every write under WORKSPACE_ROOT goes.
    const ws = new Workspace(root);
    await ws.writeFile(probe, 'doctor\n', 'create');
    await ws.removeFile(probe);
    return ok(name, `${root} is writable${existed ? '' : ' (created)'}`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return fail(name, `cannot write in ${root} (${code})`, 'set WORKSPACE_ROOT to a folder the worker’s user can write, or fix its owner/permissions');
  }
}

/** run_command: bwrap present and a trivial sandboxed command runs (the worker's own start-up check). */
export async function checkExec(exec: Config['exec']): Promise<CheckResult> {
  const name = 'run_command sandbox';
  if (exec.mode === 'off') return skip(name, 'TOOLS_EXEC=off');
  const check = await checkExecRuntime(exec);
  if (!check.ok) return fail(name, check.error, 'install bubblewrap (0.7 or later) and allow user namespaces, or set EXEC_SANDBOX=none / TOOLS_EXEC=off');
  if (exec.sandbox === 'none') return ok(name, check.warning ?? 'EXEC_SANDBOX=none');
  return ok(name, `bwrap ran a trivial command${check.warning ? `; note: ${check.warning}` : ''}`);
}

/** Each MCP server of MCP_CONFIG starts and lists its tools; every one is closed again. */
export async function checkMcp(config: Config, env: NodeJS.ProcessEnv): Promise<CheckResult[]> {
  if (config.mcpConfigPath === undefined) return [skip('mcp', 'MCP_CONFIG not set')];
  let mcp;
  try {
    mcp = loadMcpConfig(config.mcpConfigPath, env);
  } catch (err) {
    if (err instanceof ConfigError)
      return err.lines.map((line) => fail('mcp config', line, 'fix MCP_CONFIG’s file (the mcpServers format, README “MCP tools”)'));
    return [fail('mcp config', `cannot read ${config.mcpConfigPath}: ${(err as Error).message}`, 'set MCP_CONFIG to an existing JSON file')];
  }
  if (mcp.servers.length === 0) return [ok('mcp', `${config.mcpConfigPath}: no servers`)];
  const registry = await McpRegistry.start(mcp, {
    log: createLogger('silent', 'doctor'),
    toolTimeoutMs: config.agent.toolTimeoutMs,
    backoff: { initialMs: 600_000, maxMs: 600_000 },
  });
  try {
    return registry
      .status()
      .map((s) =>
        s.state === 'connected'
          ? ok(`mcp ${s.name}`, `connected, ${s.tools} tool(s)`)
          : fail(`mcp ${s.name}`, `${s.state}${s.error ? `: ${s.error}` : ''}`, 'check the server’s command/url, arguments and environment in MCP_CONFIG'),
      );
  } finally {
    await registry.close();
  }
}
