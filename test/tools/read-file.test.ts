import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReadFileTool } from '../../src/tools/read-file.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(async () => {
  await sb.cleanup();
});

const lines = (n: number): string => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

describe('read_file', () => {
  it('returns the whole text of a small file', async () => {
    await sb.write('notes/a.md', 'hello\nworld\n');
    const out = await createReadFileTool(sb.ws).execute({ path: 'notes/a.md' }, { signal: sb.signal });
    expect(out).toBe('hello\nworld');
  });

  it('reads a window with offset and limit and says how to continue', async () => {
    await sb.write('a.txt', lines(10));
    const out = await createReadFileTool(sb.ws).execute({ path: 'a.txt', offset: 3, limit: 2 }, { signal: sb.signal });
    expect(out).toBe('line 3\nline 4\n\n[Showing lines 3-4 of 10. Use offset=5 to read more.]');
    const tail = await createReadFileTool(sb.ws).execute({ path: 'a.txt', offset: 9 }, { signal: sb.signal });
    expect(tail).toBe('line 9\nline 10');
  });

  it('cuts at the line cap with a note', async () => {
    await sb.write('a.txt', lines(30));
    const out = await createReadFileTool(sb.ws, { maxLines: 20 }).execute({ path: 'a.txt' }, { signal: sb.signal });
    const shown = out.split('\n\n[')[0]!.split('\n');
    expect(shown).toHaveLength(20);
    expect(shown[19]).toBe('line 20');
    expect(out).toMatch(/\[Showing lines 1-20 of 30\. Use offset=21 to read more\.\]$/);
  });

  it('cuts at the byte cap with a note naming the cap', async () => {
    await sb.write('a.txt', lines(1000)); // ~9 KB
    const out = await createReadFileTool(sb.ws, { maxOutputBytes: 1024 }).execute({ path: 'a.txt' }, { signal: sb.signal });
    const body = out.split('\n\n[')[0]!;
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(1024);
    const shownCount = body.split('\n').length;
    expect(out).toContain(`[Showing lines 1-${shownCount} of 1000 (output cut at 1 KB). Use offset=${shownCount + 1} to read more.]`);
  });

  it('cuts overlong lines', async () => {
    await sb.write('min.js', `${'x'.repeat(50)}\nok\n`);
    const out = await createReadFileTool(sb.ws, { maxLineChars: 10 }).execute({ path: 'min.js' }, { signal: sb.signal });
    expect(out).toBe(`${'x'.repeat(10)} … [line cut: 50 chars]\nok`);
  });

  it('refuses files above the size cap', async () => {
    await sb.write('big.txt', 'a'.repeat(2048));
    const run = createReadFileTool(sb.ws, { maxFileBytes: 1024 }).execute({ path: 'big.txt' }, { signal: sb.signal });
    await expect(run).rejects.toThrow('big.txt is 2 KB, over the 1 KB limit');
  });

  it('refuses binary files', async () => {
    await sb.write('img.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 1, 2]));
    const run = createReadFileTool(sb.ws).execute({ path: 'img.png' }, { signal: sb.signal });
    await expect(run).rejects.toThrow('img.png looks like a binary file; only text files can be read');
  });

  it('explains missing files, directories, empty files and offsets past the end', async () => {
    const tool = createReadFileTool(sb.ws);
    await sb.write('dir/a.txt', 'one\n');
    await sb.write('empty.txt', '');
    await expect(tool.execute({ path: 'nope.txt' }, { signal: sb.signal })).rejects.toThrow('nope.txt does not exist');
    await expect(tool.execute({ path: 'dir' }, { signal: sb.signal })).rejects.toThrow('dir is a directory; use list_files');
    expect(await tool.execute({ path: 'empty.txt' }, { signal: sb.signal })).toBe('(empty.txt is empty)');
    await expect(tool.execute({ path: 'dir/a.txt', offset: 5 }, { signal: sb.signal })).rejects.toThrow('offset 5 is past the end of dir/a.txt (1 lines)');
  });

  it('stops when the signal is aborted', async () => {
    await sb.write('a.txt', 'x');
    const ac = new AbortController();
    ac.abort(new Error('stopped by /stop'));
    await expect(createReadFileTool(sb.ws).execute({ path: 'a.txt' }, { signal: ac.signal })).rejects.toThrow();
  });
});
