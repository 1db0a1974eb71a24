import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEditFileTool } from '../../src/tools/edit-file.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(async () => {
  await sb.cleanup();
});

describe('edit_file', () => {
  it('replaces one unique snippet and reports where', async () => {
    await sb.write('todo.md', '# Todo\n- buy milk\n- call Bob\n');
    const out = await createEditFileTool(sb.ws).execute(
      { path: 'todo.md', old_text: '- call Bob\n', new_text: '- call Bob\n- call Alice\n' },
      { signal: sb.signal },
    );
    expect(out).toBe('Edited todo.md at line 3: 1 line(s) replaced by 2 (+13 bytes)');
    expect(await sb.read('todo.md')).toBe('# Todo\n- buy milk\n- call Bob\n- call Alice\n');
  });

  it('keeps "$" sequences in new_text literal', async () => {
    await sb.write('a.txt', 'price: X\n');
    await createEditFileTool(sb.ws).execute({ path: 'a.txt', old_text: 'X', new_text: "$& $1 $$ $'" }, { signal: sb.signal });
    expect(await sb.read('a.txt')).toBe("price: $& $1 $$ $'\n");
  });

  it('says when old_text is absent, and leaves the file alone', async () => {
    await sb.write('a.txt', 'alpha\n');
    const run = createEditFileTool(sb.ws).execute({ path: 'a.txt', old_text: 'beta', new_text: 'x' }, { signal: sb.signal });
    await expect(run).rejects.toThrow('old_text not found in a.txt');
    expect(await sb.read('a.txt')).toBe('alpha\n');
  });

  it('says when old_text is ambiguous, with the count', async () => {
    await sb.write('a.txt', 'x = 1\nx = 1\nx = 1\n');
    const run = createEditFileTool(sb.ws).execute({ path: 'a.txt', old_text: 'x = 1', new_text: 'x = 2' }, { signal: sb.signal });
    await expect(run).rejects.toThrow('old_text occurs 3 times in a.txt; include more context to make it unique');
    expect(await sb.read('a.txt')).toBe('x = 1\nx = 1\nx = 1\n');
  });

  it('counts overlapping occurrences as ambiguous', async () => {
    await sb.write('a.txt', 'aaa');
    const run = createEditFileTool(sb.ws).execute({ path: 'a.txt', old_text: 'aa', new_text: 'b' }, { signal: sb.signal });
    await expect(run).rejects.toThrow('old_text occurs 2 times in a.txt');
  });

  it('matches a "\\n" snippet in a CRLF file and keeps CRLF', async () => {
    await sb.write('win.txt', 'one\r\ntwo\r\nthree\r\n');
    await createEditFileTool(sb.ws).execute({ path: 'win.txt', old_text: 'one\ntwo', new_text: 'one\n2' }, { signal: sb.signal });
    expect(await sb.read('win.txt')).toBe('one\r\n2\r\nthree\r\n');
  });

  it('refuses identical texts, missing files and files over the cap', async () => {
    await sb.write('a.txt', 'abc');
    await sb.write('big.txt', 'x'.repeat(2000));
    const tool = createEditFileTool(sb.ws, { maxFileBytes: 1024 });
    await expect(tool.execute({ path: 'a.txt', old_text: 'b', new_text: 'b' }, { signal: sb.signal })).rejects.toThrow('old_text and new_text are identical');
    await expect(tool.execute({ path: 'nope.txt', old_text: 'b', new_text: 'c' }, { signal: sb.signal })).rejects.toThrow('nope.txt does not exist');
    await expect(tool.execute({ path: 'big.txt', old_text: 'x', new_text: 'y' }, { signal: sb.signal })).rejects.toThrow(
      'big.txt is 2 KB, over the 1 KB limit',
    );
    await sb.write('small.txt', 'x');
    await expect(tool.execute({ path: 'small.txt', old_text: 'x', new_text: 'y'.repeat(2000) }, { signal: sb.signal })).rejects.toThrow(/over the limit/);
    expect(await sb.read('small.txt')).toBe('x');
  });
});
