import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildTools } from '../../src/tools/index.js';
import { runToolCall } from '../../src/tools/run.js';
import type { Tool, ToolResult } from '../../src/tools/types.js';
import { makeSandbox, SENTINEL_TEXT, type Sandbox } from './sandbox.js';

// End to end through runToolCall: nothing outside the workspace is read, written or created.
let sb: Sandbox;
let tools: Tool[];
let before: Record<string, string>;
beforeEach(async () => {
  sb = await makeSandbox();
  tools = buildTools(sb.ws);
  await fs.symlink(sb.sentinel, path.join(sb.root, 'link.txt'));
  await fs.symlink(sb.outside, path.join(sb.root, 'outdir'));
  await fs.symlink(path.join(sb.root, 'link.txt'), path.join(sb.root, 'chain.txt'));
  await fs.symlink(path.join(sb.outside, 'created.txt'), path.join(sb.root, 'dangling.txt'));
  before = await sb.outsideSnapshot();
});
afterEach(async () => {
  const after = await sb.outsideSnapshot();
  const sentinel = await fs.readFile(sb.sentinel, 'utf8');
  await sb.cleanup();
  // The outside directory is exactly as it was: same files, same contents.
  expect(after).toEqual(before);
  expect(sentinel).toBe(SENTINEL_TEXT);
});

async function run(name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return runToolCall(tools, { name, arguments: JSON.stringify(args) }, sb.signal);
}

function expectRefused(result: ToolResult, pattern: RegExp): void {
  expect(result.ok).toBe(false);
  expect(result.content).toMatch(/^Error: /);
  expect(result.content).toMatch(pattern);
  expect(result.content).not.toContain('sentinel');
}

describe('escaping the workspace', () => {
  it('refuses lexical escapes, absolute paths and NUL bytes for every tool', async () => {
    const bad = ['../outside/secret.txt', 'a/../../outside/secret.txt', sb.sentinel, '/etc/passwd', 'secret\0.txt'];
    for (const p of bad) {
      expectRefused(await run('read_file', { path: p }), /outside the workspace|absolute path|NUL byte/);
      expectRefused(await run('write_file', { path: p, content: 'pwned' }), /outside the workspace|absolute path|NUL byte/);
      expectRefused(await run('edit_file', { path: p, old_text: 'sentinel', new_text: 'pwned' }), /outside|absolute|NUL/);
      expectRefused(await run('list_files', { path: p }), /outside the workspace|absolute path|NUL byte/);
      expectRefused(await run('search_files', { pattern: 'sentinel', path: p }), /outside the workspace|absolute path|NUL byte/);
    }
    expectRefused(await run('write_file', { path: '../outside/new.txt', content: 'pwned' }), /outside the workspace/);
  });

  it('refuses to read or edit through a symlinked file pointing outside (directly or via a chain)', async () => {
    for (const p of ['link.txt', 'chain.txt']) {
      expectRefused(await run('read_file', { path: p }), /outside the workspace \(through a symlink\)/);
      expectRefused(await run('edit_file', { path: p, old_text: 'sentinel', new_text: 'pwned' }), /through a symlink/);
      expectRefused(await run('search_files', { pattern: 'sentinel', path: p }), /through a symlink/);
    }
  });

  it('refuses to write through a symlinked file pointing outside', async () => {
    expectRefused(await run('write_file', { path: 'link.txt', content: 'pwned' }), /through a symlink/);
    expectRefused(await run('write_file', { path: 'chain.txt', content: 'pwned' }), /through a symlink/);
  });

  it('refuses to create a file through a dangling symlink', async () => {
    expectRefused(await run('write_file', { path: 'dangling.txt', content: 'pwned' }), /broken symlink/);
    await expect(fs.stat(path.join(sb.outside, 'created.txt'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses everything under a symlinked directory pointing outside, existing or not', async () => {
    expectRefused(await run('list_files', { path: 'outdir' }), /through a symlink/);
    expectRefused(await run('read_file', { path: 'outdir/secret.txt' }), /through a symlink/);
    expectRefused(await run('write_file', { path: 'outdir/new.txt', content: 'pwned' }), /through a symlink/);
    expectRefused(await run('write_file', { path: 'outdir/sub/dir/new.txt', content: 'pwned' }), /through a symlink/);
    expectRefused(await run('edit_file', { path: 'outdir/secret.txt', old_text: 'sentinel', new_text: 'x' }), /through a symlink/);
    expectRefused(await run('search_files', { pattern: 'sentinel', path: 'outdir' }), /through a symlink/);
  });

  it('does not follow symlinks when listing or searching the whole workspace', async () => {
    await sb.write('notes.md', 'a sentinel of our own\n');
    const search = await run('search_files', { pattern: 'sentinel', path: '.' });
    expect(search).toMatchObject({ ok: true, content: 'notes.md:1: a sentinel of our own' });
    const list = await run('list_files', { path: '.', recursive: true });
    expect(list).toMatchObject({ ok: true, content: 'chain.txt@\ndangling.txt@\nlink.txt@\nnotes.md\noutdir@' });
  });
});
