import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ListedTool } from '../../src/tools/mcp/connection.js';
import type { McpCallResult } from '../../src/tools/mcp/content.js';
import { createMcpTool, createMcpTools, type McpToolSource } from '../../src/tools/mcp/tools.js';
import { SchemaCompiler } from '../../src/tools/mcp/validate.js';
import { MAX_RESULT_CHARS } from '../../src/tools/run.js';
import { toModelTools } from '../../src/tools/schema.js';
import { ToolError, type Tool } from '../../src/tools/types.js';
import { BLOB_BYTES, DOT_PNG } from '../fakes/mcp-server.js';
import { callTool } from '../fakes/mcp-harness.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(async () => {
  await sb.cleanup();
});

const ISSUE_SCHEMA = {
  type: 'object',
  properties: {
    title: { type: 'string', minLength: 1 },
    labels: { type: 'array', items: { type: 'string' } },
    assignee: { type: 'object', properties: { login: { type: 'string' }, team: { enum: ['core', 'web'] } }, required: ['login'] },
    priority: { type: 'integer', minimum: 1, maximum: 5 },
  },
  required: ['title'],
  additionalProperties: false,
};

function listed(name: string, inputSchema: Record<string, unknown> = { type: 'object' }, readOnly = false): ListedTool {
  const { schema } = new SchemaCompiler().compile(inputSchema);
  return { name, description: `The ${name} tool, as the server describes it.`, inputSchema, readOnly, args: schema };
}

/** A source that answers every call with `answer` and records what it was sent. */
function source(answer: McpCallResult | ((tool: string, args: Record<string, unknown>) => Promise<McpCallResult>), approve: boolean | string[] = false) {
  const calls: { tool: string; args: Record<string, unknown> }[] = [];
  const src: McpToolSource = {
    name: 'tracker',
    config: { approve },
    timeoutMs: 7_000,
    async call(tool, args) {
      calls.push({ tool, args });
      return typeof answer === 'function' ? answer(tool, args) : answer;
    },
  };
  return { src, calls };
}

const text = (t: string): McpCallResult => ({ content: [{ type: 'text', text: t }] });

describe('an MCP tool', () => {
  it('validates arguments against the JSON Schema, naming each bad field, and never calls the server then', async () => {
    const { src, calls } = source(text('created'));
    const tools = [createMcpTool('tracker__create_issue', src, listed('create_issue', ISSUE_SCHEMA), sb.ws)];
    const bad = { title: 3, labels: ['ok', 7], assignee: { team: 'ops' }, priority: 9, color: 'red' };
    const result = await callTool(tools, 'tracker__create_issue', bad);
    expect(result.ok).toBe(false);
    expect(result.content).toBe(
      [
        'Error: invalid arguments for tracker__create_issue:',
        '- color: is not a field of this tool',
        '- title: must be string',
        '- labels.1: must be string',
        '- assignee.login: is required',
        '- assignee.team: must be one of "core", "web"',
        '- priority: must be <= 5',
        `You sent: ${JSON.stringify(bad)}`,
      ].join('\n'),
    );
    expect(result.summary).toBe('tracker__create_issue → error: invalid arguments (color, title, labels.1, assignee.login, assignee.team, prio…)');
    expect(calls).toEqual([]);

    const missing = await callTool(tools, 'tracker__create_issue', {});
    expect(missing.content).toContain('- title: is required');
    const notObject = await callTool(tools, 'tracker__create_issue', ['x']);
    expect(notObject.content).toContain('- (arguments): must be object');
  });

  it('passes valid arguments to the server by its MCP name and joins the text parts', async () => {
    const { src, calls } = source({
      content: [
        { type: 'text', text: 'Created #12' },
        { type: 'text', text: 'https://tracker/12' },
      ],
    });
    const tools = [createMcpTool('tracker__create_issue', src, listed('create_issue', ISSUE_SCHEMA), sb.ws)];
    const args = { title: 'Printer on fire', labels: ['hw'], assignee: { login: 'ann', team: 'core' }, priority: 1 };
    const result = await callTool(tools, 'tracker__create_issue', args);
    expect(result).toMatchObject({ ok: true, content: 'Created #12\nhttps://tracker/12' });
    expect(calls).toEqual([{ tool: 'create_issue', args }]);
  });

  it('turns an isError result into an error result with the server’s text', async () => {
    const tools = [
      createMcpTool('tracker__close', source({ isError: true, content: [{ type: 'text', text: 'issue 12 is locked' }] }).src, listed('close'), sb.ws),
    ];
    expect(await callTool(tools, 'tracker__close', {})).toEqual({
      ok: false,
      content: 'Error: issue 12 is locked',
      summary: 'tracker__close → error: issue 12 is locked',
    });
    const silent = [createMcpTool('tracker__close', source({ isError: true, content: [] }).src, listed('close'), sb.ws)];
    expect((await callTool(silent, 'tracker__close', {})).content).toBe('Error: the tool reported an error and gave no message');
  });

  it('saves images into the workspace under mcp/<server>/, numbered, and names them in the result', async () => {
    const answer: McpCallResult = {
      content: [
        { type: 'text', text: 'chart:' },
        { type: 'image', data: DOT_PNG, mimeType: 'image/png' },
      ],
    };
    const tools = [createMcpTool('tracker__chart', source(answer).src, listed('chart'), sb.ws)];
    const first = await callTool(tools, 'tracker__chart', {});
    const second = await callTool(tools, 'tracker__chart', {});
    expect(first.content).toBe('chart:\n[image saved: mcp/tracker/chart-1.png, 68 B]');
    expect(second.content).toBe('chart:\n[image saved: mcp/tracker/chart-2.png, 68 B]');
    expect(await fs.readFile(path.join(sb.root, 'mcp/tracker/chart-1.png'))).toEqual(Buffer.from(DOT_PNG, 'base64'));
  });

  it('saves embedded resources (text and blob) and names their URIs; links and structured content are text', async () => {
    const answer: McpCallResult = {
      content: [
        { type: 'resource', resource: { uri: 'file:///notes/readme.md', mimeType: 'text/markdown', text: '# Readme\n' } },
        { type: 'resource', resource: { uri: 'file:///data/report.xlsx', blob: BLOB_BYTES.toString('base64') } },
        { type: 'resource_link', uri: 'https://tracker/12', name: 'Issue 12' },
        { type: 'audio', data: BLOB_BYTES.toString('base64'), mimeType: 'audio/wav' },
        { type: 'hologram' },
      ],
    };
    const tools = [createMcpTool('tracker__export', source(answer).src, listed('export'), sb.ws)];
    const result = await callTool(tools, 'tracker__export', {});
    expect(result.content).toBe(
      [
        '[resource saved: mcp/tracker/export-1.md, 9 B, from file:///notes/readme.md]',
        '[resource saved: mcp/tracker/export-2.xlsx, 6 B, from file:///data/report.xlsx]',
        '[resource link: https://tracker/12 (Issue 12)]',
        '[audio saved: mcp/tracker/export-3.wav, 6 B]',
        '[hologram content left out]',
      ].join('\n'),
    );
    expect(await sb.read('mcp/tracker/export-1.md')).toBe('# Readme\n');
    expect(await fs.readFile(path.join(sb.root, 'mcp/tracker/export-2.xlsx'))).toEqual(BLOB_BYTES);

    const structured = [createMcpTool('tracker__count', source({ content: [], structuredContent: { open: 3 } }).src, listed('count'), sb.ws)];
    expect((await callTool(structured, 'tracker__count', {})).content).toBe('{"open":3}');
    const empty = [createMcpTool('tracker__noop', source({ content: [] }).src, listed('noop'), sb.ws)];
    expect((await callTool(empty, 'tracker__noop', {})).content).toBe('(no output)');
  });

  it('never writes outside the workspace, even through a symlinked mcp/ folder', async () => {
    const before = await sb.outsideSnapshot();
    await fs.symlink(sb.outside, path.join(sb.root, 'mcp'));
    const answer: McpCallResult = { content: [{ type: 'image', data: DOT_PNG, mimeType: 'image/png' }] };
    const result = await callTool([createMcpTool('tracker__chart', source(answer).src, listed('chart'), sb.ws)], 'tracker__chart', {});
    expect(result).toMatchObject({ ok: false, content: 'Error: mcp/tracker goes through a symlink (mcp); files are never written through links' });
    expect(await sb.outsideSnapshot()).toEqual(before);
  });

  it('caps a huge result like every other tool', async () => {
    const tools = [createMcpTool('tracker__dump', source(text('x'.repeat(MAX_RESULT_CHARS + 500))).src, listed('dump'), sb.ws)];
    const result = await callTool(tools, 'tracker__dump', {});
    expect(result.content).toBe(`${'x'.repeat(MAX_RESULT_CHARS)}\n[Result cut at ${MAX_RESULT_CHARS} characters.]`);
  });

  it('reports a server that is not connected as an error result', async () => {
    const down: McpToolSource = {
      name: 'tracker',
      config: { approve: false },
      timeoutMs: 1_000,
      call: async () => {
        throw new ToolError('the MCP server tracker is not connected');
      },
    };
    const result = await callTool([createMcpTool('tracker__close', down, listed('close'), sb.ws)], 'tracker__close', {});
    expect(result).toMatchObject({ ok: false, content: 'Error: the MCP server tracker is not connected' });
  });

  it('carries readOnly, timeoutMs and needsApproval from the server and its config', () => {
    const [read, write, other] = createMcpTools(
      [
        { source: source(text(''), ['write']).src, tool: listed('read', { type: 'object' }, true) },
        { source: source(text(''), ['write']).src, tool: listed('write') },
        { source: source(text(''), true).src, tool: listed('other') },
      ],
      sb.ws,
    ) as [Tool, Tool, Tool];
    expect([read.name, write.name, other.name]).toEqual(['tracker__read', 'tracker__write', 'tracker__other']);
    expect([read.readOnly, write.readOnly]).toEqual([true, false]);
    expect([read.needsApproval, write.needsApproval, other.needsApproval]).toEqual([undefined, true, true]);
    expect('needsApproval' in read).toBe(false);
    expect(read.timeoutMs).toBe(7_000);
  });

  it('shows the model the server’s description and input schema as sent', () => {
    const tool = createMcpTool('tracker__create_issue', source(text('')).src, listed('create_issue', ISSUE_SCHEMA), sb.ws);
    const [model] = toModelTools([tool]);
    expect(model).toEqual({
      type: 'function',
      function: { name: 'tracker__create_issue', description: 'The create_issue tool, as the server describes it.', parameters: ISSUE_SCHEMA },
    });
  });

  it('lets arguments through unchecked when the server’s schema does not compile', async () => {
    const broken = { type: 'object', properties: { a: { $ref: '#/definitions/missing' } } };
    const compiled = new SchemaCompiler().compile(broken);
    expect(compiled.problem).toMatch(/can't resolve reference|missing/i);
    const { src, calls } = source(text('ok'));
    const tool = createMcpTool('tracker__x', src, { name: 'x', description: '', inputSchema: broken, readOnly: false, args: compiled.schema }, sb.ws);
    expect(await callTool([tool], 'tracker__x', { a: 1 })).toMatchObject({ ok: true, content: 'ok' });
    expect(calls).toEqual([{ tool: 'x', args: { a: 1 } }]);
  });

  it('understands draft 2020-12 schemas and formats', async () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { email: { type: 'string', format: 'email' }, tags: { type: 'array', prefixItems: [{ type: 'string' }] } },
      required: ['email'],
    };
    const tools = [createMcpTool('tracker__invite', source(text('ok')).src, listed('invite', schema), sb.ws)];
    const result = await callTool(tools, 'tracker__invite', { email: 'not-an-email', tags: [1] });
    expect(result.content).toContain('- email: must match format "email"');
    expect(result.content).toContain('- tags.0: must be string');
    expect((await callTool(tools, 'tracker__invite', { email: 'a@b.co' })).ok).toBe(true);
  });
});
