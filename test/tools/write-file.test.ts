import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWriteFileTool } from '../../src/tools/write-file.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(async () => {
  await sb.cleanup();
});

describe('write_file', () => {
  it('creates parent directories and reports the bytes written', async () => {
    const out = await createWriteFileTool(sb.ws).execute({ path: 'a/b/c.md', content: 'héllo\n' }, { signal: sb.signal });
    expect(out).toBe('Created a/b/c.md (7 bytes written)');
    expect(await sb.read('a/b/c.md')).toBe('héllo\n');
  });

  it('overwrites an existing file', async () => {
    await sb.write('a.txt', 'old content');
    const out = await createWriteFileTool(sb.ws).execute({ path: 'a.txt', content: 'new' }, { signal: sb.signal });
    expect(out).toBe('Overwrote a.txt (3 bytes written)');
    expect(await sb.read('a.txt')).toBe('new');
  });

  it('refuses content over the size cap and writes nothing', async () => {
    const run = createWriteFileTool(sb.ws, { maxBytes: 1024 }).execute({ path: 'big.txt', content: 'x'.repeat(1025) }, { signal: sb.signal });
    await expect(run).rejects.toThrow('content is 1 KB; write_file accepts at most 1 KB');
    await expect(fs.stat(path.join(sb.root, 'big.txt'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses to overwrite a directory, or to write below a file', async () => {
    await sb.write('dir/a.txt', 'x');
    const tool = createWriteFileTool(sb.ws);
    await expect(tool.execute({ path: 'dir', content: 'x' }, { signal: sb.signal })).rejects.toThrow('dir is a directory');
    await expect(tool.execute({ path: '.', content: 'x' }, { signal: sb.signal })).rejects.toThrow('. is a directory');
    await expect(tool.execute({ path: 'dir/a.txt/b', content: 'x' }, { signal: sb.signal })).rejects.toThrow(
      'dir/a.txt/b has a parent that is not a directory',
    );
  });
});
