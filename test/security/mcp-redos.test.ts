import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMcpConfig, McpRegistry } from '../../src/tools/mcp/index.js';
import type { Tool } from '../../src/tools/types.js';
import { callTool, captureLog, writeMcpConfig } from '../fakes/mcp-harness.js';
import { REPO, waitFor } from '../helpers/processes.js';
import { makeSandbox, type Sandbox } from '../tools/sandbox.js';
import { BACKREFERENCE, EVIL_PATTERN, LOOKAHEAD } from './mcp-pattern-server.js';

/**
 * An MCP server's tool input schema is the server's, and so is every `pattern` in it; the
 * arguments checked against it are the model's. A backtracking regex engine on the worker's main
 * thread lets the two together stall every run of the worker: `^(a+)+$` against "aaa…a!" doubles
 * its time with every character. Patterns run in a linear-time engine (RE2); one that engine cannot
 * compile is left out of the check (with one warning), and the tool still registers and works.
 */
let sb: Sandbox;
let registry: McpRegistry;
let tools: Tool[];
const logs = captureLog();

beforeAll(async () => {
  sb = await makeSandbox();
  const file = await writeMcpConfig(sb.base, {
    pattern: { command: process.execPath, args: ['--import', 'tsx', 'test/security/mcp-pattern-server.ts'], cwd: REPO },
  });
  registry = await McpRegistry.start(loadMcpConfig(file, {}), { log: logs.log, toolTimeoutMs: 20_000, backoff: { initialMs: 60_000 } });
  tools = registry.toolsFor(sb.ws, 'slack');
}, 30_000);

afterAll(async () => {
  await registry?.close();
  await sb?.cleanup();
});

const bad = (n: number) => `${'a'.repeat(n - 1)}!`;

describe('security: MCP tool schema patterns run in a linear-time engine (no ReDoS)', () => {
  it('the server registered with every tool', () => {
    expect(registry.status()).toEqual([{ name: 'pattern', state: 'connected', tools: 3 }]);
    expect(tools.map((t) => t.name).sort()).toEqual(['pattern__backref', 'pattern__evil', 'pattern__relist']);
  });

  // A backtracking engine takes 2^31 steps here (seconds to minutes): the test fails by its timeout.
  it('validates ^(a+)+$ against a 32-character non-matching argument, and a matching one, correctly and at once', { timeout: 10_000 }, async () => {
    const refused = await callTool(tools, 'pattern__evil', { a: bad(32) });
    expect(refused.ok).toBe(false);
    expect(refused.content).toContain(`- a: must match pattern "${EVIL_PATTERN}"`);
    const accepted = await callTool(tools, 'pattern__evil', { a: 'a'.repeat(32) });
    expect(accepted).toMatchObject({ ok: true, content: `called evil with {"a":"${'a'.repeat(32)}"}` });
  });

  // 2^39 steps: with a backtracking engine this never finishes (run it alone to see the hang).
  it('and against a 40-character one', { timeout: 10_000 }, async () => {
    const refused = await callTool(tools, 'pattern__evil', { a: bad(40) });
    expect(refused.ok).toBe(false);
    expect(refused.content).toContain(`- a: must match pattern "${EVIL_PATTERN}"`);
    expect((await callTool(tools, 'pattern__evil', { a: 'a'.repeat(40) })).ok).toBe(true);
    // Linear: a long argument is no problem either.
    expect((await callTool(tools, 'pattern__evil', { a: bad(100_000) })).ok).toBe(false);
  });

  it('a pattern RE2 cannot compile (backreference, lookahead) is left out with one warning; the rest of the schema still holds', async () => {
    const warnings = () => logs.lines().filter((l) => l.msg === 'MCP tool input schema: patterns left out (not supported by the linear-time regex engine)');
    // "ab" fails the backreference, "y" the lookahead: both pass now, neither keyword is checked.
    expect(await callTool(tools, 'pattern__backref', { word: 'ab', tags: ['y'] })).toMatchObject({
      ok: true,
      content: 'called backref with {"word":"ab","tags":["y"]}',
    });
    // Every other keyword, and the patterns RE2 compiles, are still checked.
    const wrong = await callTool(tools, 'pattern__backref', { word: 'a', code: 'abc', extra: 1 });
    expect(wrong.ok).toBe(false);
    expect(wrong.content).toContain('- extra: is not a field of this tool');
    expect(wrong.content).toContain('- word: must NOT have fewer than 2 characters');
    expect(wrong.content).toContain('- code: must match pattern "^[A-Z]{3}$"');
    expect(logs.lines().some((l) => /does not compile/.test(String(l.msg)))).toBe(false);

    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ level: 40, mcpServer: 'pattern', tool: 'backref' });
    expect(warnings()[0]!.patterns).toEqual([
      expect.objectContaining({ at: '/properties/word', pattern: BACKREFERENCE }),
      expect.objectContaining({ at: '/properties/tags/items', pattern: LOOKAHEAD }),
    ]);

    // The list is read again (tools/list_changed): the same schema is not warned about twice.
    const changed = () => logs.lines().filter((l) => l.msg === 'MCP server tools changed').length;
    const before = changed();
    expect((await callTool(tools, 'pattern__relist', {})).ok).toBe(true);
    await waitFor('the list read again', () => changed() > before);
    expect(warnings()).toHaveLength(1);
  }, 20_000);
});
