import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createListFilesTool } from '../../src/tools/list-files.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(async () => {
  await sb.cleanup();
});

describe('list_files', () => {
  beforeEach(async () => {
    await sb.write('b.txt', 'b');
    await sb.write('a.md', 'a');
    await sb.write('notes/z.md', 'z');
    await sb.write('notes/deep/x.txt', 'x');
    await sb.write('node_modules/pkg/index.js', '');
    await sb.write('.git/HEAD', '');
  });

  it('lists the root, sorted, directories marked with "/"', async () => {
    const out = await createListFilesTool(sb.ws).execute({ path: '.' }, { signal: sb.signal });
    expect(out).toBe('.git/\na.md\nb.txt\nnode_modules/\nnotes/');
  });

  it('lists a subdirectory with workspace-relative paths', async () => {
    const out = await createListFilesTool(sb.ws).execute({ path: 'notes' }, { signal: sb.signal });
    expect(out).toBe('notes/deep/\nnotes/z.md');
  });

  it('recurses, without entering .git or node_modules', async () => {
    const out = await createListFilesTool(sb.ws).execute({ path: '.', recursive: true }, { signal: sb.signal });
    expect(out.split('\n')).toEqual(['.git/', 'a.md', 'b.txt', 'node_modules/', 'notes/', 'notes/deep/', 'notes/deep/x.txt', 'notes/z.md']);
  });

  it('stops at the depth cap with a note', async () => {
    const out = await createListFilesTool(sb.ws, { maxDepth: 2 }).execute({ path: '.', recursive: true }, { signal: sb.signal });
    expect(out.split('\n')).toEqual([
      '.git/',
      'a.md',
      'b.txt',
      'node_modules/',
      'notes/',
      'notes/deep/',
      'notes/z.md',
      '(directories 2 levels down are not expanded; list them separately)',
    ]);
  });

  it('caps entries with a "N more" note', async () => {
    for (let i = 0; i < 30; i++) await sb.write(`many/f${String(i).padStart(2, '0')}.txt`, '');
    const out = await createListFilesTool(sb.ws, { maxEntries: 10 }).execute({ path: 'many' }, { signal: sb.signal });
    const lines = out.split('\n');
    expect(lines).toHaveLength(11);
    expect(lines[0]).toBe('many/f00.txt');
    expect(lines[9]).toBe('many/f09.txt');
    expect(lines[10]).toBe('… 20 more entries not shown');
  });

  it('stops counting at the scan cap', async () => {
    for (let i = 0; i < 30; i++) await sb.write(`many/f${String(i).padStart(2, '0')}.txt`, '');
    const out = await createListFilesTool(sb.ws, { maxEntries: 5, maxScanned: 12 }).execute({ path: 'many' }, { signal: sb.signal });
    expect(out.split('\n').at(-1)).toBe('… more than 7 more entries not shown');
  });

  it('marks symlinks with "@" and does not follow them', async () => {
    await fs.symlink(sb.outside, path.join(sb.root, 'notes', 'out'));
    const out = await createListFilesTool(sb.ws).execute({ path: 'notes', recursive: true }, { signal: sb.signal });
    expect(out).toBe('notes/deep/\nnotes/deep/x.txt\nnotes/out@\nnotes/z.md');
    expect(out).not.toContain('secret');
  });

  it('explains empty directories, files and missing paths', async () => {
    await fs.mkdir(path.join(sb.root, 'empty'));
    const tool = createListFilesTool(sb.ws);
    expect(await tool.execute({ path: 'empty' }, { signal: sb.signal })).toBe('(empty is empty)');
    await expect(tool.execute({ path: 'a.md' }, { signal: sb.signal })).rejects.toThrow('a.md is not a directory; use read_file');
    await expect(tool.execute({ path: 'gone' }, { signal: sb.signal })).rejects.toThrow('gone does not exist');
  });

  it('honours an aborted signal', async () => {
    const ac = new AbortController();
    ac.abort(new Error('stop'));
    await expect(createListFilesTool(sb.ws).execute({ path: '.', recursive: true }, { signal: ac.signal })).rejects.toThrow('stop');
  });
});
