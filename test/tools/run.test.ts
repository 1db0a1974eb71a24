import { z } from 'zod';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildTools } from '../../src/tools/index.js';
import { MAX_RESULT_CHARS, runToolCall } from '../../src/tools/run.js';
import { ToolError, type Tool } from '../../src/tools/types.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

let sb: Sandbox;
let tools: Tool[];
beforeEach(async () => {
  sb = await makeSandbox();
  tools = buildTools(sb.ws);
});
afterEach(async () => {
  await sb.cleanup();
});

const call = (name: string, args: unknown) => ({ name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });

function fakeTool(execute: Tool['execute']): Tool {
  return { name: 'fake', description: 'A fake tool', schema: z.object({ path: z.string() }), execute };
}

describe('runToolCall', () => {
  it('runs a tool and summarises the result', async () => {
    await sb.write('notes/meeting.md', 'x'.repeat(1229) + '\ny\n');
    const result = await runToolCall(tools, call('read_file', { path: 'notes/meeting.md' }), sb.signal);
    expect(result.ok).toBe(true);
    expect(result.content).toBe(`${'x'.repeat(1229)}\ny`);
    expect(result.summary).toBe('read_file notes/meeting.md → 1.2 KB');
  });

  it('uses a one-line result as its summary', async () => {
    const result = await runToolCall(tools, call('write_file', { path: 'a.txt', content: 'hi' }), sb.signal);
    expect(result).toEqual({ ok: true, content: 'Created a.txt (2 bytes written)', summary: 'write_file a.txt → Created a.txt (2 bytes written)' });
  });

  it('lists the available tools for an unknown name', async () => {
    const result = await runToolCall(tools, call('delete_everything', {}), sb.signal);
    expect(result.ok).toBe(false);
    expect(result.content).toBe('Error: unknown tool "delete_everything". Available tools: list_files, read_file, write_file, edit_file, search_files');
    expect(result.summary).toBe('delete_everything → error: unknown tool');
  });

  it('quotes malformed JSON and the parse error', async () => {
    const result = await runToolCall(tools, call('read_file', '{"path": "a.txt"'), sb.signal);
    expect(result.ok).toBe(false);
    expect(result.content).toMatch(/^Error: arguments are not valid JSON \(.+\)\. You sent: \{"path": "a\.txt"$/);
    expect(result.summary).toBe('read_file → error: invalid JSON arguments');
  });

  it('bounds the echo of a huge malformed argument string', async () => {
    const result = await runToolCall(tools, call('write_file', `{"content": "${'z'.repeat(100_000)}`), sb.signal);
    expect(result.ok).toBe(false);
    expect(result.content.length).toBeLessThan(1000);
    expect(result.content).toContain('You sent: {"content": "zzz');
  });

  it('names each invalid argument path and its issue', async () => {
    const result = await runToolCall(tools, call('read_file', { path: 7, offset: 0 }), sb.signal);
    expect(result.ok).toBe(false);
    const lines = result.content.split('\n');
    expect(lines[0]).toBe('Error: invalid arguments for read_file:');
    expect(lines[1]).toBe('- path: Invalid input: expected string, received number');
    expect(lines[2]).toMatch(/^- offset: Too small: expected number to be >=1/);
    expect(lines[3]).toBe('You sent: {"path":7,"offset":0}');
    expect(result.summary).toBe('read_file → error: invalid arguments (path, offset)');
  });

  it('treats top-level nulls as absent and empty arguments as {}', async () => {
    await sb.write('a.txt', 'one\ntwo\n');
    const result = await runToolCall(tools, call('read_file', { path: 'a.txt', offset: null, limit: null }), sb.signal);
    expect(result).toMatchObject({ ok: true, content: 'one\ntwo' });
    const listing = await runToolCall(tools, call('list_files', ''), sb.signal);
    expect(listing).toMatchObject({ ok: true, content: 'a.txt' });
  });

  it('turns a ToolError into an error result with its message', async () => {
    const result = await runToolCall(tools, call('read_file', { path: '../etc/passwd' }), sb.signal);
    expect(result).toEqual({
      ok: false,
      content: 'Error: ../etc/passwd is outside the workspace',
      summary: 'read_file ../etc/passwd → error: ../etc/passwd is outside the workspace',
    });
    const edit = await runToolCall(tools, call('edit_file', { path: 'a.txt', old_text: 'x', new_text: 'y' }), sb.signal);
    expect(edit.summary).toBe('edit_file a.txt → error: a.txt does not exist');
  });

  it('turns a plain thrown Error (or a non-Error) into an error result, never throwing', async () => {
    const boom = fakeTool(async () => {
      throw new TypeError('cannot read properties of undefined');
    });
    expect(await runToolCall([boom], call('fake', { path: 'x' }), sb.signal)).toEqual({
      ok: false,
      content: 'Error: TypeError: cannot read properties of undefined',
      summary: 'fake x → error: TypeError: cannot read properties of undefined',
    });
    const odd = fakeTool(() => Promise.reject('a string'));
    expect((await runToolCall([odd], call('fake', { path: 'x' }), sb.signal)).content).toBe('Error: a string');
    const toolError = fakeTool(async () => {
      throw new ToolError('nope, fix it');
    });
    expect((await runToolCall([toolError], call('fake', { path: 'x' }), sb.signal)).content).toBe('Error: nope, fix it');
  });

  it('reports cancellation without running the tool', async () => {
    let ran = false;
    const tool = fakeTool(async () => {
      ran = true;
      return 'done';
    });
    const ac = new AbortController();
    ac.abort();
    const result = await runToolCall([tool], call('fake', { path: 'x' }), ac.signal);
    expect(result).toEqual({ ok: false, content: 'Error: cancelled', summary: 'fake x → error: cancelled' });
    expect(ran).toBe(false);
  });

  it('caps the content of an oversized result', async () => {
    const tool = fakeTool(async () => 'w'.repeat(MAX_RESULT_CHARS + 5000));
    const result = await runToolCall([tool], call('fake', { path: 'x' }), sb.signal);
    expect(result.ok).toBe(true);
    expect(result.content.length).toBeLessThan(MAX_RESULT_CHARS + 100);
    expect(result.content.endsWith(`[Result cut at ${MAX_RESULT_CHARS} characters.]`)).toBe(true);
  });
});

describe('runToolCall with a deadline', () => {
  const timedOut = {
    ok: false,
    content: 'Error: fake timed out after 0.1 s; it may have done part of its work. Try a smaller or narrower request.',
    summary: 'fake x → error: timed out',
  };

  /** Resolves when `signal` aborts, with its reason. */
  const aborted = (signal: AbortSignal) => new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));

  it('aborts the signal of a tool that respects it, and reports the timeout', async () => {
    let reason: unknown;
    const tool = fakeTool(async (_args, { signal }) => {
      reason = await aborted(signal);
      throw reason;
    });
    expect(await runToolCall([tool], call('fake', { path: 'x' }), sb.signal, { timeoutMs: 100 })).toEqual(timedOut);
    expect(reason).toBeInstanceOf(DOMException);
    expect((reason as DOMException).name).toBe('TimeoutError');
  });

  it('answers at the deadline when the tool ignores its signal, and its later failure is not unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    try {
      let settled!: () => void;
      const late = new Promise<void>((resolve) => (settled = resolve));
      const tool = fakeTool(
        () =>
          new Promise<string>((_, reject) =>
            setTimeout(() => {
              reject(new Error('failed long after its deadline'));
              settled();
            }, 400),
          ),
      );
      const started = Date.now();
      expect(await runToolCall([tool], call('fake', { path: 'x' }), sb.signal, { timeoutMs: 100 })).toEqual(timedOut);
      expect(Date.now() - started).toBeLessThan(350);
      await late;
      // Unhandled rejections are reported after the microtask queue drains.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('a tool that finishes in time returns its result', async () => {
    const tool = fakeTool(async () => 'done');
    expect(await runToolCall([tool], call('fake', { path: 'x' }), sb.signal, { timeoutMs: 100 })).toEqual({
      ok: true,
      content: 'done',
      summary: 'fake x → done',
    });
  });

  it("the caller's abort is still reported as cancelled", async () => {
    const ac = new AbortController();
    const tool = fakeTool(async (_args, { signal }) => {
      throw await aborted(signal);
    });
    setTimeout(() => ac.abort(), 20);
    expect(await runToolCall([tool], call('fake', { path: 'x' }), ac.signal, { timeoutMs: 10_000 })).toEqual({
      ok: false,
      content: 'Error: cancelled',
      summary: 'fake x → error: cancelled',
    });
  });
});
