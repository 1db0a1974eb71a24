import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resultText, type McpCallResult } from '../../src/tools/mcp/content.js';
import { loadMcpConfig, McpRegistry } from '../../src/tools/mcp/index.js';
import { createMcpTool, type McpToolSource } from '../../src/tools/mcp/tools.js';
import { SchemaCompiler } from '../../src/tools/mcp/validate.js';
import { DOT_PNG } from '../fakes/mcp-server.js';
import { callTool, captureLog, stdioEntry, writeMcpConfig } from '../fakes/mcp-harness.js';
import { makeSandbox, type Sandbox } from '../tools/sandbox.js';

/**
 * Finding (medium): an MCP server's result may carry images, audio and embedded resources as
 * base64, and each was decoded and saved into the session's workspace whatever its size: a
 * server (or a page it fetched) could fill the worker's memory and disk with one answer. Now each
 * is capped by ATTACHMENT_MAX_BYTES (the cap on a channel's downloads): a larger one is neither
 * decoded nor saved, and the model reads that it was left out and why.
 */
let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(async () => {
  vi.restoreAllMocks();
  await sb.cleanup();
});

const target = () => ({ ws: sb.ws, server: 'drawer', tool: 'render' });
/** Base64 of `bytes` bytes (any content: only its length counts). */
const base64Of = (bytes: number) => 'QUJD'.repeat(Math.ceil(bytes / 3)).slice(0, Math.ceil(bytes / 3) * 4);
const savedFiles = async () => (await fs.readdir(path.join(sb.root, 'mcp'), { recursive: true }).catch(() => [] as string[])).sort();

describe('security: MCP media are capped by ATTACHMENT_MAX_BYTES', () => {
  it('an image, audio clip or resource over the limit is left out, not decoded, not saved; one at the limit is saved', async () => {
    const decoded: number[] = [];
    const from = Buffer.from.bind(Buffer) as (value: string, encoding: BufferEncoding) => Buffer;
    vi.spyOn(Buffer, 'from').mockImplementation(((value: unknown, encoding?: unknown) => {
      if (typeof value === 'string' && encoding === 'base64') decoded.push(value.length);
      return from(value as string, encoding as BufferEncoding);
    }) as typeof Buffer.from);

    const limit = 3_000;
    const result: McpCallResult = {
      content: [
        { type: 'image', data: base64Of(3_600), mimeType: 'image/png' },
        { type: 'audio', data: base64Of(9_000), mimeType: 'audio/wav' },
        { type: 'resource', resource: { uri: 'file:///big.bin', blob: base64Of(4_500) } },
        { type: 'resource', resource: { uri: 'file:///big.txt', mimeType: 'text/plain', text: 'é'.repeat(2_000) } },
        { type: 'image', data: base64Of(3_000), mimeType: 'image/png' },
      ],
    };
    expect((await resultText(result, target(), limit)).split('\n')).toEqual([
      '[image left out: 3.6 kB, over the 3 kB limit (ATTACHMENT_MAX_BYTES)]',
      '[audio left out: 9 kB, over the 3 kB limit (ATTACHMENT_MAX_BYTES)]',
      '[resource left out: 4.5 kB, over the 3 kB limit (ATTACHMENT_MAX_BYTES), from file:///big.bin]',
      '[resource left out: 4 kB, over the 3 kB limit (ATTACHMENT_MAX_BYTES), from file:///big.txt]',
      '[image saved: mcp/drawer/render-1.png, 2.9 KB]',
    ]);
    // Only the one within the limit was decoded.
    expect(decoded).toEqual([4_000]);
    expect(await savedFiles()).toEqual(['drawer', 'drawer/render-1.png']);
    expect((await fs.stat(path.join(sb.root, 'mcp/drawer/render-1.png'))).size).toBe(3_000);
  });

  it('the tool passes the configured limit: a 31.2 MB image is left out under the default 20 MB; small ones still arrive', async () => {
    const answer: McpCallResult = {
      content: [
        { type: 'text', text: 'rendered:' },
        { type: 'image', data: 'A'.repeat(41_600_000), mimeType: 'image/png' },
        { type: 'image', data: DOT_PNG, mimeType: 'image/png' },
      ],
    };
    const source: McpToolSource = { name: 'drawer', config: { approve: false }, timeoutMs: 5_000, call: async () => answer };
    const inputSchema = { type: 'object' };
    const listed = { name: 'render', description: 'Renders.', inputSchema, readOnly: true, args: new SchemaCompiler().compile(inputSchema).schema };
    const tool = createMcpTool('drawer__render', source, listed, sb.ws, { mediaMaxBytes: 20_000_000 });
    const result = await callTool([tool], 'drawer__render', {});
    expect(result).toMatchObject({
      ok: true,
      content: 'rendered:\n[image left out: 31.2 MB, over the 20 MB limit (ATTACHMENT_MAX_BYTES)]\n[image saved: mcp/drawer/render-1.png, 68 B]',
    });
    expect(await savedFiles()).toEqual(['drawer', 'drawer/render-1.png']);

    const tight = createMcpTool(
      'drawer__render',
      { ...source, call: async () => ({ content: [{ type: 'image', data: DOT_PNG, mimeType: 'image/png' }] }) },
      listed,
      sb.ws,
      { mediaMaxBytes: 10 },
    );
    expect((await callTool([tight], 'drawer__render', {})).content).toBe('[image left out: 68 B, over the 10 B limit (ATTACHMENT_MAX_BYTES)]');
  });

  it('the registry (as the worker starts it with ATTACHMENT_MAX_BYTES) gives its tools the limit', async () => {
    const file = await writeMcpConfig(sb.base, { fake: stdioEntry() });
    const registry = await McpRegistry.start(loadMcpConfig(file, {}), {
      log: captureLog().log,
      toolTimeoutMs: 20_000,
      backoff: { initialMs: 60_000 },
      mediaMaxBytes: 50,
    });
    try {
      const result = await callTool(registry.toolsFor(sb.ws, 'slack'), 'fake__draw', {});
      expect(result).toMatchObject({ ok: true, content: 'a red dot\n[image left out: 68 B, over the 50 B limit (ATTACHMENT_MAX_BYTES)]' });
      expect(await savedFiles()).toEqual([]);
    } finally {
      await registry.close();
    }
  }, 30_000);
});
