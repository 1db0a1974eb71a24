import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMcpConfig, McpRegistry } from '../../src/tools/mcp/index.js';
import { toModelTools } from '../../src/tools/schema.js';
import type { Tool } from '../../src/tools/types.js';
import { DOT_PNG, LONG_TOOL } from '../fakes/mcp-server.js';
import { callTool, captureLog, stdioEntry, writeMcpConfig } from '../fakes/mcp-harness.js';
import { waitFor } from '../helpers/processes.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

const SECRET = 'worker-only-secret-5f2a9c';

let sb: Sandbox;
let registry: McpRegistry;
let appendFile: string;
const logs = captureLog();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  sb = await makeSandbox();
  appendFile = path.join(sb.base, 'fake-owned.log');
  // The worker's own secret: a stdio server must not see it.
  process.env.SWITCHBOARD_TEST_SECRET = SECRET;
  const file = await writeMcpConfig(sb.base, {
    fake: stdioEntry({
      env: { FAKE_MCP_APPEND_FILE: appendFile, FAKE_MCP_PAGE_SIZE: '3', GREETING: '${MCP_TEST_GREETING}' },
      approve: ['append_line'],
      timeoutMs: 1500,
    }),
    narrow: stdioEntry({ tools: { include: ['lookup', 'sleep', 'env'], exclude: ['sleep'] }, platforms: ['slack'], approve: true }),
    broken: { command: path.join(sb.base, 'no-such-mcp-server'), args: [] },
    crashing: {
      command: process.execPath,
      args: ['-e', 'console.error("login refused for key " + process.env.API_KEY); process.exit(3)'],
      env: { API_KEY: '${CRASH_KEY}' },
    },
    mute: { command: 'sleep', args: ['30'], timeoutMs: 500 },
  });
  const config = loadMcpConfig(file, { ...process.env, MCP_TEST_GREETING: 'hello from the config', CRASH_KEY: 'sk-crash-key-77' });
  registry = await McpRegistry.start(config, { log: logs.log, toolTimeoutMs: 60_000, backoff: { initialMs: 60_000 } });
});

afterAll(async () => {
  delete process.env.SWITCHBOARD_TEST_SECRET;
  await registry?.close();
  await sb?.cleanup();
});

const slackTools = () => registry.toolsFor(sb.ws, 'slack');
const tool = (tools: Tool[], name: string) => tools.find((t) => t.name === name);

describe('MCP over stdio', () => {
  it('connects, lists every page of tools, and reports a server that failed to start without stopping', () => {
    const status = registry.status();
    expect(status.slice(0, 2)).toEqual([
      { name: 'fake', state: 'connected', tools: 10 },
      { name: 'narrow', state: 'connected', tools: 10 },
    ]);
    expect(status[2]).toMatchObject({ name: 'broken', state: 'down', tools: 0 });
    expect(status[2]!.error).toMatch(/ENOENT/);
    expect(status[3]).toEqual({ name: 'crashing', state: 'down', tools: 0, error: 'MCP error -32000: Connection closed' });
    // A server that never answers initialize is given up on at its timeoutMs; start did not wait longer.
    expect(status[4]).toEqual({ name: 'mute', state: 'down', tools: 0, error: 'MCP error -32001: Request timed out' });
    const down = logs.lines().filter((l) => l.msg === 'MCP server down');
    expect(down.map((l) => l.mcpServer).sort()).toEqual(['broken', 'crashing', 'mute']);
    for (const line of down) expect(line).toMatchObject({ level: 40, retryInMs: expect.any(Number) });
    // Its last stderr line says why, with the secret it was given blanked out.
    expect(down.find((l) => l.mcpServer === 'crashing')).toMatchObject({ stderr: 'login refused for key [redacted]' });
    expect(logs.raw()).not.toContain('sk-crash-key-77');
  });

  it('offers tools by platform and include/exclude, named <server>__<tool>', () => {
    const slack = slackTools().map((t) => t.name);
    expect(slack.filter((n) => n.startsWith('narrow__'))).toEqual(['narrow__lookup', 'narrow__env']);
    expect(slack.filter((n) => n.startsWith('fake__'))).toHaveLength(10);
    expect(slack.some((n) => n.startsWith('broken__'))).toBe(false);
    const telegram = registry.toolsFor(sb.ws, 'telegram').map((t) => t.name);
    expect(telegram.some((n) => n.startsWith('narrow__'))).toBe(false);
    expect(telegram).toHaveLength(10);
  });

  it('takes readOnly from readOnlyHint and needsApproval from approve', () => {
    const tools = slackTools();
    expect(tool(tools, 'fake__lookup')).toMatchObject({ readOnly: true, timeoutMs: 1500 });
    expect(tool(tools, 'fake__append_line')).toMatchObject({ readOnly: false, needsApproval: true });
    expect(tool(tools, 'fake__draw')!.readOnly).toBe(false);
    expect(tool(tools, 'fake__lookup')!.needsApproval).toBeUndefined();
    expect(tool(tools, 'narrow__lookup')).toMatchObject({ readOnly: true, needsApproval: true, timeoutMs: 60_000 });
  });

  it('gives the model the server’s description and input schema', () => {
    const lookup = toModelTools([tool(slackTools(), 'fake__lookup')!])[0]!;
    expect(lookup.type === 'function' && lookup.function).toEqual({
      name: 'fake__lookup',
      description: 'Looks a key up in the directory.',
      parameters: expect.objectContaining({ type: 'object', required: ['key'] }),
    });
  });

  it('runs a stdio server with PATH and its entry’s env only, never the worker’s secrets', async () => {
    const tools = slackTools();
    expect((await callTool(tools, 'fake__env', { name: 'SWITCHBOARD_TEST_SECRET' })).content).toBe('(unset)');
    expect((await callTool(tools, 'fake__env', { name: 'GREETING' })).content).toBe('hello from the config');
    const keys = (await callTool(tools, 'fake__env', {})).content.split(',');
    // PATH plus the SDK's fixed list of harmless variables (HOME, USER, LOGNAME, SHELL, TERM), plus the entry's env.
    const allowed = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'FAKE_MCP_APPEND_FILE', 'FAKE_MCP_PAGE_SIZE', 'GREETING'];
    expect(keys.filter((k) => !allowed.includes(k))).toEqual([]);
    expect(keys).toContain('PATH');
    expect((await callTool(tools, 'narrow__env', { name: 'FAKE_MCP_APPEND_FILE' })).content).toBe('(unset)');
  });

  it('calls a read-only tool and a side-effecting one', async () => {
    const tools = slackTools();
    expect(await callTool(tools, 'fake__lookup', { key: 'printer' })).toEqual({
      ok: true,
      content: 'lookup printer: found',
      summary: 'fake__lookup → lookup printer: found',
    });
    expect(await callTool(tools, 'fake__append_line', { line: 'first' })).toMatchObject({ ok: true, content: 'appended' });
    expect(await fs.readFile(appendFile, 'utf8')).toBe('first\n');
  });

  it('checks arguments against the server’s schema before calling', async () => {
    const result = await callTool(slackTools(), 'fake__lookup', { key: 1, options: { limit: 0 } });
    expect(result.ok).toBe(false);
    expect(result.content).toContain('- key: must be string\n- options.limit: must be >= 1');
    const line = await callTool(slackTools(), 'fake__append_line', {});
    expect(line.content).toContain('- line: is required');
    expect(await fs.readFile(appendFile, 'utf8')).toBe('first\n');
  });

  it('saves an image into the workspace and names it', async () => {
    const result = await callTool(slackTools(), 'fake__draw', {});
    expect(result).toMatchObject({ ok: true, content: 'a red dot\n[image saved: mcp/fake/draw-1.png, 68 B]' });
    expect(await fs.readFile(path.join(sb.root, 'mcp/fake/draw-1.png'))).toEqual(Buffer.from(DOT_PNG, 'base64'));
  });

  it('saves embedded resources', async () => {
    const result = await callTool(slackTools(), 'fake__doc', {});
    expect(result.content).toBe(
      '[resource saved: mcp/fake/doc-1.md, 9 B, from file:///notes/readme.md]\n[resource saved: mcp/fake/doc-2.bin, 6 B, from file:///data/blob]',
    );
  });

  it('returns isError as an error result', async () => {
    expect(await callTool(slackTools(), 'fake__fail', {})).toMatchObject({ ok: false, content: 'Error: the backend said no' });
  });

  it('times a slow call out at the server’s timeoutMs, and the server still answers the next call', async () => {
    const started = Date.now();
    const result = await callTool(slackTools(), 'fake__sleep', { ms: 10_000 }, 60_000);
    const elapsed = Date.now() - started;
    expect(result).toMatchObject({ ok: false, content: expect.stringContaining('fake__sleep timed out after 1.5 s') });
    expect(elapsed).toBeGreaterThanOrEqual(1400);
    expect(elapsed).toBeLessThan(3000);
    expect((await callTool(slackTools(), 'fake__sleep', { ms: 10 })).content).toBe('slept 10 ms');
  });

  it('calls a tool whose name was shortened', async () => {
    const long = slackTools().find((t) => t.name.startsWith('fake__summarise'))!;
    expect(long.name).toMatch(/^fake__summarise_the_quarterly_revenue_figures_for_every_[0-9a-f]{8}$/);
    expect(LONG_TOOL.length).toBeGreaterThan(64);
    expect((await callTool(slackTools(), long.name, {})).content).toBe('the long one answered');
  });

  it('picks up tools/list_changed', async () => {
    expect(await callTool(slackTools(), 'fake__add_tool', { name: 'late_tool' })).toMatchObject({ ok: true, content: 'added late_tool' });
    await waitFor('late_tool listed', () => tool(slackTools(), 'fake__late_tool'), 5_000);
    expect(registry.status()[0]).toEqual({ name: 'fake', state: 'connected', tools: 11 });
    expect((await callTool(slackTools(), 'fake__late_tool', {})).content).toBe('I am late_tool');
    // The other process of the same script did not change.
    expect(tool(slackTools(), 'narrow__late_tool')).toBeUndefined();
  });
});

describe('a stdio server that dies', () => {
  it('turns the call in flight into an error result, leaves its tools out, and reconnects with backoff', async () => {
    const local = await makeSandbox();
    const log = captureLog();
    const file = await writeMcpConfig(local.base, { flaky: stdioEntry({ env: { API_KEY: 'sk-flaky-secret-0042' } }) });
    const reg = await McpRegistry.start(loadMcpConfig(file, {}), { log: log.log, toolTimeoutMs: 20_000, backoff: { initialMs: 300, maxMs: 1_000 } });
    try {
      const tools = reg.toolsFor(local.ws, 'slack');
      const pid = Number((await callTool(tools, 'flaky__pid', {})).content);
      expect(isAlive(pid)).toBe(true);

      const inFlight = callTool(tools, 'flaky__sleep', { ms: 15_000 });
      await new Promise((r) => setTimeout(r, 300));
      const killedAt = Date.now();
      process.kill(pid, 'SIGKILL');
      const result = await inFlight;
      expect(Date.now() - killedAt).toBeLessThan(2_000);
      expect(result).toMatchObject({ ok: false, content: 'Error: the MCP server flaky went away during the call; it may have done part of its work' });

      // Down: out of new requests, and a tool object held from before says so.
      expect(reg.status()[0]).toMatchObject({ name: 'flaky', state: 'down', tools: 0, error: 'the connection closed' });
      expect(reg.toolsFor(local.ws, 'slack')).toEqual([]);
      expect(await callTool(tools, 'flaky__lookup', { key: 'a' })).toMatchObject({ ok: false, content: 'Error: the MCP server flaky is not connected' });

      await waitFor('reconnected', () => reg.status()[0]!.state === 'connected', 10_000);
      const again = reg.toolsFor(local.ws, 'slack');
      expect(await callTool(again, 'flaky__lookup', { key: 'a' })).toMatchObject({ ok: true, content: 'lookup a: found' });
      const newPid = Number((await callTool(again, 'flaky__pid', {})).content);
      expect(newPid).not.toBe(pid);
      // A tool object from before the crash works again too: it calls through the connection.
      expect((await callTool(tools, 'flaky__lookup', { key: 'b' })).ok).toBe(true);

      const down = log.lines().filter((l) => l.msg === 'MCP server down');
      expect(down).toHaveLength(1);
      expect(down[0]).toMatchObject({ mcpServer: 'flaky', error: 'the connection closed' });
      expect(log.raw()).not.toContain('sk-flaky-secret-0042');

      await reg.close();
      await waitFor('child gone', () => !isAlive(newPid), 5_000);
      expect(reg.status()[0]).toMatchObject({ state: 'down', error: 'closed' });
    } finally {
      await reg.close();
      await local.cleanup();
    }
  });
});
