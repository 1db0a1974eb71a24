import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createLogger, type Logger } from '../../src/log.js';
import { runToolCall } from '../../src/tools/run.js';
import type { Tool, ToolResult } from '../../src/tools/types.js';
import { REPO } from '../helpers/processes.js';

/** The mcpServers entry that runs the fake stdio server (test/fakes/mcp-stdio.ts) under tsx. */
export function stdioEntry(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: ['--import', 'tsx', 'test/fakes/mcp-stdio.ts'], cwd: REPO, ...extra };
}

/** Writes an MCP_CONFIG file into `dir` and returns its path. */
export async function writeMcpConfig(dir: string, servers: Record<string, unknown>): Promise<string> {
  const file = path.join(dir, 'mcp.json');
  await writeFile(file, JSON.stringify({ mcpServers: servers }, null, 2));
  return file;
}

/** A pino logger whose JSON lines are kept in memory. */
export function captureLog(level = 'debug'): { log: Logger; lines: () => Record<string, unknown>[]; raw: () => string } {
  let raw = '';
  const log = createLogger(level, 'test', { write: (s: string) => void (raw += s) });
  return {
    log,
    raw: () => raw,
    lines: () =>
      raw
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Runs one call through runToolCall, as the agent loop does. */
export function callTool(tools: readonly Tool[], name: string, args: unknown, timeoutMs?: number, signal = new AbortController().signal): Promise<ToolResult> {
  return runToolCall(tools, { name, arguments: JSON.stringify(args) }, signal, timeoutMs === undefined ? {} : { timeoutMs });
}
