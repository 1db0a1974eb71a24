import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getEncoding } from 'js-tiktoken';
import { DEFAULT_SYSTEM_PROMPT } from '../src/agent/prompt.js';
import { createLogger } from '../src/log.js';
import { buildTools, toModelTools, Workspace } from '../src/tools/index.js';
import { loadMcpConfig, McpRegistry } from '../src/tools/mcp/index.js';
import { stdioEntry, writeMcpConfig } from '../test/fakes/mcp-harness.js';

const encoding = getEncoding('o200k_base');
const tokens = (value: unknown) => encoding.encode(typeof value === 'string' ? value : JSON.stringify(value)).length;

/**
 * What MCP servers add to every request: the tool schemas of the built-in tools alone, then with
 * two stdio MCP servers (the test fake, 10 tools each) — descriptions and schemas as the servers
 * send them. Counted with o200k_base like the rest of the prompt figures.
 */
export async function mcpPromptCost(): Promise<{ builtIn: number; withMcp: number; mcpTools: number; system: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'sb-bench-mcp-'));
  const config = await writeMcpConfig(dir, { tracker: stdioEntry(), files: stdioEntry() });
  const registry = await McpRegistry.start(loadMcpConfig(config, process.env), { log: createLogger('silent'), toolTimeoutMs: 10_000 });
  try {
    const ws = new Workspace(dir);
    const builtIn = buildTools(ws);
    const mcp = registry.toolsFor(ws, 'telegram');
    return {
      builtIn: tokens(toModelTools(builtIn)),
      withMcp: tokens(toModelTools([...builtIn, ...mcp])),
      mcpTools: mcp.length,
      system: tokens(DEFAULT_SYSTEM_PROMPT),
    };
  } finally {
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  }
}
