import { mkdtemp, readdir, readFile, rm, stat, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/tools/atomic-write.js';
import { REPO, spawnNode } from '../helpers/processes.js';

describe('writeFileAtomic: a file is the old content or the new one, never a part', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-atomic-'));
  });
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it('an aborted write leaves the old content and no temporary file', async () => {
    const file = join(dir, 'journal.txt');
    await writeFile(file, 'old\n');
    const abort = new AbortController();
    abort.abort();
    await expect(writeFileAtomic(file, 'x'.repeat(5_000_000), abort.signal)).rejects.toThrow();
    expect(await readFile(file, 'utf8')).toBe('old\n');
    expect(await readdir(dir)).toEqual(['journal.txt']);
  });

  it('keeps the permission bits of the file it replaces', async () => {
    const file = join(dir, 'run.sh');
    await writeFile(file, 'echo 1\n');
    await chmod(file, 0o750);
    await writeFileAtomic(file, 'echo 2\n');
    expect([(await stat(file)).mode & 0o777, await readFile(file, 'utf8')]).toEqual([0o750, 'echo 2\n']);
  });

  it('a writer killed (SIGKILL) in the middle of rewriting leaves a whole file', async () => {
    const file = join(dir, 'big.txt');
    await writeFile(file, 'A'.repeat(4_000_000));
    const writer = join(dir, 'writer.ts');
    await writeFile(
      writer,
      `import { writeFileAtomic } from ${JSON.stringify(join(REPO, 'src/tools/atomic-write.ts'))};
for (let i = 0; ; i++) await writeFileAtomic(process.argv[2]!, (i % 2 ? 'A' : 'B').repeat(4_000_000));\n`,
    );
    for (let round = 0; round < 3; round++) {
      const child = spawnNode(writer, [file], {});
      await new Promise((r) => setTimeout(r, 600 + round * 170));
      child.kill('SIGKILL');
      await child.exited;
      const content = await readFile(file, 'utf8');
      expect([content.length, new Set(content).size]).toEqual([4_000_000, 1]);
    }
  }, 30_000);
});
