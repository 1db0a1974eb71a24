import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSearchFilesTool } from '../../src/tools/search-files.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
  await sb.write('notes/a.md', '# A\nTODO: write intro\nnothing here\n');
  await sb.write('notes/b.txt', 'todo lowercase\r\nTODO: crlf line\r\n');
  await sb.write('src/main.ts', 'const x = 1; // TODO refactor\n');
  await sb.write('node_modules/dep/index.js', '// TODO in a dependency\n');
  await sb.write('.git/config', 'TODO in git\n');
  await sb.write('logo.png', new Uint8Array([0x89, 0x50, 0, 0x54, 0x4f, 0x44, 0x4f]));
});
afterEach(async () => {
  await sb.cleanup();
});

describe('search_files', () => {
  it('returns path:line: text for each hit, skipping .git, node_modules and binary files', async () => {
    const out = await createSearchFilesTool(sb.ws).execute({ pattern: 'TODO', path: '.' }, { signal: sb.signal });
    expect(out.split('\n')).toEqual(['notes/a.md:2: TODO: write intro', 'notes/b.txt:2: TODO: crlf line', 'src/main.ts:1: const x = 1; // TODO refactor']);
  });

  it('supports regex syntax, ignore_case, a sub-path and a file-name filter', async () => {
    const tool = createSearchFilesTool(sb.ws);
    expect(await tool.execute({ pattern: '^todo\\b', path: 'notes', ignore_case: true }, { signal: sb.signal })).toBe(
      'notes/a.md:2: TODO: write intro\nnotes/b.txt:1: todo lowercase\nnotes/b.txt:2: TODO: crlf line',
    );
    expect(await tool.execute({ pattern: '^todo\\b', path: 'notes' }, { signal: sb.signal })).toBe('notes/b.txt:1: todo lowercase');
    expect(await tool.execute({ pattern: 'TODO', path: '.', name: '.md' }, { signal: sb.signal })).toBe('notes/a.md:2: TODO: write intro');
    expect(await tool.execute({ pattern: 'x = \\d', path: 'src/main.ts' }, { signal: sb.signal })).toBe('src/main.ts:1: const x = 1; // TODO refactor');
  });

  it('says so when nothing matches', async () => {
    const out = await createSearchFilesTool(sb.ws).execute({ pattern: 'zebra', path: 'notes' }, { signal: sb.signal });
    expect(out).toBe('No matches for /zebra/ in notes (2 files).');
  });

  it('rejects an invalid regex with the regex error', async () => {
    const run = createSearchFilesTool(sb.ws).execute({ pattern: '(unclosed', path: '.' }, { signal: sb.signal });
    await expect(run).rejects.toThrow('pattern is not a valid JavaScript regex: Invalid regular expression: /(unclosed/: Unterminated group');
  });

  it('caps matches and line length with notes', async () => {
    await sb.write('many.txt', Array.from({ length: 50 }, (_, i) => `hit ${i} ${'y'.repeat(100)}`).join('\n'));
    const out = await createSearchFilesTool(sb.ws, { maxMatches: 5, maxLineChars: 20 }).execute({ pattern: '^hit', path: 'many.txt' }, { signal: sb.signal });
    const lines = out.split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toBe(`many.txt:1: hit 0 ${'y'.repeat(13)}…`);
    expect(lines[5]).toBe('[Stopped at 5 matches; narrow the pattern or path.]');
  });

  it('caps the files searched and skips oversized files', async () => {
    const tool = createSearchFilesTool(sb.ws, { maxFiles: 1 });
    const out = await tool.execute({ pattern: 'TODO', path: 'notes' }, { signal: sb.signal });
    expect(out).toBe('notes/a.md:2: TODO: write intro\n[Only the first 1 files were searched; narrow the path.]');

    await sb.write('big/huge.txt', `TODO ${'z'.repeat(3000)}`);
    const big = await createSearchFilesTool(sb.ws, { maxFileBytes: 1024 }).execute({ pattern: 'TODO', path: 'big' }, { signal: sb.signal });
    expect(big).toBe('No matches for /TODO/ in big (1 files).\n[Skipped 1 unreadable or over-1 KB files.]');
  });

  it('caps the directory entries walked', async () => {
    const out = await createSearchFilesTool(sb.ws, { maxEntries: 2 }).execute({ pattern: 'TODO', path: 'notes' }, { signal: sb.signal });
    expect(out).toBe('notes/a.md:2: TODO: write intro\nnotes/b.txt:2: TODO: crlf line');
    const capped = await createSearchFilesTool(sb.ws, { maxEntries: 1 }).execute({ pattern: 'TODO', path: 'notes' }, { signal: sb.signal });
    expect(capped).toBe('notes/a.md:2: TODO: write intro\n[Stopped walking after 1 entries; narrow the path.]');
  });

  it('caps the total bytes read', async () => {
    await sb.write('bulk/1.txt', 'x'.repeat(600));
    await sb.write('bulk/2.txt', 'TODO'.padEnd(600, 'x'));
    const out = await createSearchFilesTool(sb.ws, { maxTotalBytes: 1000 }).execute({ pattern: 'TODO', path: 'bulk' }, { signal: sb.signal });
    expect(out).toBe('No matches for /TODO/ in bulk (2 files).\n[Stopped after reading 1000 B; narrow the path.]');
  });

  it('stops a catastrophic regex at the timeout, keeping the event loop free', async () => {
    await sb.write('evil.txt', `${'a'.repeat(40)}!\n`);
    const started = Date.now();
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    const out = await createSearchFilesTool(sb.ws, { timeoutMs: 300 }).execute({ pattern: '^(a+)+$', path: '.' }, { signal: sb.signal });
    clearInterval(ticker);
    expect(out).toContain('[Stopped after 0.3 s; results are partial.');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(ticks).toBeGreaterThan(3);
  });

  it('stops when the signal is aborted mid-search', async () => {
    await sb.write('evil.txt', `${'a'.repeat(40)}!\n`);
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('stopped by user')), 100);
    const run = createSearchFilesTool(sb.ws, { timeoutMs: 20_000 }).execute({ pattern: '^(a+)+$', path: '.' }, { signal: ac.signal });
    await expect(run).rejects.toThrow('stopped by user');
  });
});
