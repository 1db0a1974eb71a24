import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMcpConfig, McpRegistry } from '../../src/tools/mcp/index.js';
import type { Tool } from '../../src/tools/types.js';
import { DOT_PNG, FakeMcpTools, startFakeMcpHttp, type FakeMcpHttp } from '../fakes/mcp-server.js';
import { callTool, captureLog, writeMcpConfig } from '../fakes/mcp-harness.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/processes.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

const TOKEN = 'mcp-token-9d1e44b7';
const BACKOFF = { initialMs: 200, maxMs: 500 };

let sb: Sandbox;
let appendFile: string;
let streamable: FakeMcpHttp;
let legacy: FakeMcpHttp;
let legacyOnly: FakeMcpHttp;
let registry: McpRegistry;
const logs = captureLog();

beforeAll(async () => {
  sb = await makeSandbox();
  appendFile = path.join(sb.base, 'http-owned.log');
  streamable = await startFakeMcpHttp(new FakeMcpTools({ appendFile, pageSize: 4 }));
  legacy = await startFakeMcpHttp(new FakeMcpTools(), { mode: 'sse' });
  legacyOnly = await startFakeMcpHttp(new FakeMcpTools(), { mode: 'sse' });
  const file = await writeMcpConfig(sb.base, {
    web: { url: streamable.url, headers: { Authorization: 'Bearer ${MCP_TEST_TOKEN}' }, timeoutMs: 1000, approve: true },
    old: { url: legacyOnly.url, transport: 'sse', tools: { exclude: ['append_line'] } },
    fallback: { url: legacy.url, platforms: ['discord'] },
    strict: { url: legacy.url, transport: 'streamable-http' },
  });
  registry = await McpRegistry.start(loadMcpConfig(file, { MCP_TEST_TOKEN: TOKEN }), { log: logs.log, toolTimeoutMs: 30_000, backoff: { initialMs: 60_000 } });
});

afterAll(async () => {
  await registry?.close();
  await Promise.all([streamable?.close(), legacy?.close(), legacyOnly?.close()]);
  await sb?.cleanup();
});

const tools = (platform = 'slack') => registry.toolsFor(sb.ws, platform);
const find = (list: Tool[], name: string) => list.find((t) => t.name === name);

describe('MCP over Streamable HTTP', () => {
  it('connects with the configured headers, ${VAR} expanded, and never logs them', () => {
    expect(registry.status()[0]).toEqual({ name: 'web', state: 'connected', tools: 10 });
    expect(streamable.requests.length).toBeGreaterThan(0);
    expect(streamable.requests.every((r) => r.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(logs.raw()).not.toContain(TOKEN);
  });

  it('calls text, side-effecting, image and isError tools', async () => {
    const list = tools();
    expect(find(list, 'web__lookup')).toMatchObject({ readOnly: true, needsApproval: true, timeoutMs: 1000 });
    expect(await callTool(list, 'web__lookup', { key: 'k' })).toMatchObject({ ok: true, content: 'lookup k: found' });
    expect(await callTool(list, 'web__append_line', { line: 'over http' })).toMatchObject({ ok: true, content: 'appended' });
    expect(await fs.readFile(appendFile, 'utf8')).toBe('over http\n');
    expect((await callTool(list, 'web__draw', {})).content).toBe('a red dot\n[image saved: mcp/web/draw-1.png, 68 B]');
    expect(await fs.readFile(path.join(sb.root, 'mcp/web/draw-1.png'))).toEqual(Buffer.from(DOT_PNG, 'base64'));
    expect(await callTool(list, 'web__fail', {})).toMatchObject({ ok: false, content: 'Error: the backend said no' });
    expect((await callTool(list, 'web__lookup', { key: ['x'] })).content).toContain('- key: must be string');
  });

  it('times a slow call out at timeoutMs and cancels it on the server', async () => {
    const before = streamable.tools.cancelled;
    const started = Date.now();
    const result = await callTool(tools(), 'web__sleep', { ms: 10_000 });
    expect(result).toMatchObject({ ok: false, content: expect.stringContaining('web__sleep timed out after 1 s') });
    expect(Date.now() - started).toBeLessThan(2_500);
    await waitFor('the server saw notifications/cancelled', () => streamable.tools.cancelled === before + 1, 3_000);
  });

  it('picks up tools/list_changed sent by the server on its own', async () => {
    await streamable.tools.addTool('pushed');
    await waitFor('pushed listed', () => find(tools(), 'web__pushed'), 5_000);
    expect((await callTool(tools(), 'web__pushed', {})).content).toBe('I am pushed');
  });
});

describe('MCP over HTTP+SSE', () => {
  it('uses SSE when the entry says transport: sse, and never tries Streamable HTTP', async () => {
    expect(registry.status()[1]).toEqual({ name: 'old', state: 'connected', tools: 10 });
    const list = tools();
    expect(find(list, 'old__append_line')).toBeUndefined();
    expect(await callTool(list, 'old__lookup', { key: 's' })).toMatchObject({ ok: true, content: 'lookup s: found' });
    expect((await callTool(list, 'old__draw', {})).content).toBe('a red dot\n[image saved: mcp/old/draw-1.png, 68 B]');
    expect(legacyOnly.requests.filter((r) => r.method === 'POST' && r.path === '/mcp')).toEqual([]);
    expect(legacyOnly.requests.filter((r) => r.method === 'GET' && r.path === '/mcp')).toHaveLength(1);
  });

  it('falls back to SSE when a url server does not speak Streamable HTTP', async () => {
    expect(registry.status()[2]).toEqual({ name: 'fallback', state: 'connected', tools: 10 });
    expect(logs.lines()).toContainEqual(
      expect.objectContaining({ mcpServer: 'fallback', status: 405, msg: 'MCP server does not speak Streamable HTTP; trying SSE' }),
    );
    // Offered on discord only.
    expect(find(tools(), 'fallback__lookup')).toBeUndefined();
    expect(await callTool(tools('discord'), 'fallback__lookup', { key: 'f' })).toMatchObject({ ok: true, content: 'lookup f: found' });
  });

  it('does not fall back when the entry says transport: streamable-http', () => {
    expect(registry.status()[3]).toMatchObject({ name: 'strict', state: 'down', tools: 0, error: expect.stringContaining('405') });
  });

  it('picks up list_changed over SSE', async () => {
    await legacyOnly.tools.addTool('pushed_sse');
    await waitFor('pushed_sse listed', () => find(tools(), 'old__pushed_sse'), 5_000);
    expect((await callTool(tools(), 'old__pushed_sse', {})).content).toBe('I am pushed_sse');
  });
});

describe('closing', () => {
  it('ends the Streamable HTTP session with a DELETE and stops every connection', async () => {
    const server = await startFakeMcpHttp(new FakeMcpTools());
    const file = await writeMcpConfig(sb.base, { brief: { url: server.url } });
    const reg = await McpRegistry.start(loadMcpConfig(file, {}), { log: captureLog().log, toolTimeoutMs: 5_000 });
    try {
      expect(reg.status()[0]!.state).toBe('connected');
      await reg.close();
      expect(server.requests.filter((r) => r.method === 'DELETE')).toHaveLength(1);
      expect(reg.status()).toEqual([{ name: 'brief', state: 'down', tools: 0, error: 'closed' }]);
      expect(reg.toolsFor(sb.ws, 'slack')).toEqual([]);
    } finally {
      await reg.close();
      await server.close();
    }
  });
});

describe('an HTTP server that is not there', () => {
  it('is down at start, then connected once it comes up, and reconnects after it restarts', async () => {
    const port = await freePort();
    const local = await makeSandbox();
    const log = captureLog();
    const file = await writeMcpConfig(local.base, { late: { url: `http://127.0.0.1:${port}/mcp` } });
    const reg = await McpRegistry.start(loadMcpConfig(file, {}), { log: log.log, toolTimeoutMs: 5_000, backoff: BACKOFF });
    let server: FakeMcpHttp | undefined;
    try {
      expect(reg.status()[0]).toMatchObject({ name: 'late', state: 'down', tools: 0, error: expect.stringMatching(/fetch failed|ECONNREFUSED/) });
      expect(reg.toolsFor(local.ws, 'slack')).toEqual([]);

      server = await startFakeMcpHttp(new FakeMcpTools(), { port });
      await waitFor('connected', () => reg.status()[0]!.state === 'connected', 10_000);
      const list = reg.toolsFor(local.ws, 'slack');
      expect(await callTool(list, 'late__lookup', { key: 'up' })).toMatchObject({ ok: true, content: 'lookup up: found' });

      // The server goes away: the next call is an error result and the server is marked down.
      await server.close();
      server = undefined;
      const lost = await callTool(list, 'late__lookup', { key: 'gone' });
      expect(lost.ok).toBe(false);
      expect(lost.content).toMatch(/^Error: the MCP server late (could not be reached|went away during the call|is not connected)/);
      await waitFor('down', () => reg.status()[0]!.state !== 'connected', 5_000);

      // It comes back (a new process: the old session is gone): a new session, and calls work.
      server = await startFakeMcpHttp(new FakeMcpTools(), { port });
      await waitFor('reconnected', () => reg.status()[0]!.state === 'connected', 10_000);
      expect(await callTool(reg.toolsFor(local.ws, 'slack'), 'late__lookup', { key: 'back' })).toMatchObject({ ok: true, content: 'lookup back: found' });
    } finally {
      await reg.close();
      await server?.close();
      await local.cleanup();
    }
  });
});
