import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fitMessages, longMessagePath } from '../../src/run/input/long-message.js';
import { terminalMessage } from '../../src/channels/terminal/inbound.js';
import { Workspace } from '../../src/tools/workspace.js';
import { createLogger } from '../../src/log.js';

const log = createLogger('silent');
let root: string;
let ws: Workspace;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'sb-long-'));
  ws = new Workspace(root);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const LONG = `${'a'.repeat(150)}THE-END`;

describe('a message over MESSAGE_MAX_CHARS', () => {
  it('is saved whole in uploads/, and the model reads its beginning and a note saying where the rest is', async () => {
    const short = terminalMessage('s', 'short', 'ada');
    const long = terminalMessage('s', LONG, 'ada');
    const [a, b] = await fitMessages(ws, [short, long], 100, log);
    expect(a).toBe(short);
    const path = longMessagePath(long);
    expect(path).toMatch(/^uploads\/message-[0-9a-f]{12}\.txt$/);
    expect(await readFile(join(root, path), 'utf8')).toBe(LONG);
    expect(b!.text.startsWith('a'.repeat(100))).toBe(true);
    expect(b!.text).not.toContain('THE-END');
    expect(b!.text).toContain(
      `[This message was 157 characters long, too long to include in full: above are its first 100 characters. It is saved in full at ${path}; read it with read_file (offset/limit) or search_files.]`,
    );
    expect(b!.attachments).toBe(long.attachments);
  });

  it('is written once under one name: a resumed turn keeps the file an earlier run saved, and leaves no scratch file', async () => {
    const long = terminalMessage('s', LONG, 'ada');
    await fitMessages(ws, [long], 100, log);
    const path = join(root, longMessagePath(long));
    await writeFile(path, 'the model edited this since');
    const [again] = await fitMessages(ws, [long], 100, log);
    expect(again!.text).toContain(longMessagePath(long));
    expect(await readFile(path, 'utf8')).toBe('the model edited this since');
    expect(await readdir(join(root, 'uploads'))).toEqual([longMessagePath(long).slice('uploads/'.length)]);
  });

  it('when saving fails, the beginning still goes through with a note that the rest is missing', async () => {
    await mkdir(root, { recursive: true });
    await writeFile(join(root, 'uploads'), 'a file where the folder should be');
    const [fitted] = await fitMessages(ws, [terminalMessage('s', LONG, 'ada')], 100, log);
    expect(fitted!.text.startsWith('a'.repeat(100))).toBe(true);
    expect(fitted!.text).toMatch(
      /Saving the rest failed \((E[A-Z]+|uploads\/message-[0-9a-f]+\.txt has a parent that is not a directory \(uploads\))\), so it is not available/,
    );
    expect(fitted!.text).not.toContain(root);
  });

  it('is never cut inside a surrogate pair', async () => {
    const [split, whole] = await fitMessages(
      ws,
      [terminalMessage('s', `${'a'.repeat(9)}😀b`, 'ada'), terminalMessage('s', `${'a'.repeat(8)}😀b`, 'ada')],
      10,
      log,
    );
    expect(split!.text.startsWith(`${'a'.repeat(9)}\n\n[This message was 12 characters long`)).toBe(true);
    expect(split!.text).toContain('above are its first 9 characters');
    expect(whole!.text.startsWith(`${'a'.repeat(8)}😀\n\n[`)).toBe(true);
  });
});
