import { mkdtemp, readdir, readFile, rm, stat, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Workspace } from '../../src/tools/workspace.js';
import { REPO, spawnNode } from '../helpers/processes.js';

describe('Workspace.writeFile (replace): a file is the old content or the new one, never a part', () => {
  let dir: string;
  let ws: Workspace;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-atomic-'));
    ws = new Workspace(dir);
  });
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it('an aborted write leaves the old content and no temporary file', async () => {
    const file = join(dir, 'journal.txt');
    await writeFile(file, 'old\n');
    const abort = new AbortController();
    abort.abort();
    await expect(ws.writeFile('journal.txt', 'x'.repeat(5_000_000), 'replace', abort.signal)).rejects.toThrow();
    expect(await readFile(file, 'utf8')).toBe('old\n');
    expect(await readdir(dir)).toEqual(['journal.txt']);
  });

  it('keeps the permission bits of the file it replaces', async () => {
    const file = join(dir, 'run.sh');
    await writeFile(file, 'echo 1\n');
    await chmod(file, 0o750);
    await ws.writeFile('run.sh', 'echo 2\n', 'replace');
    expect([(await stat(file)).mode & 0o777, await readFile(file, 'utf8')]).toEqual([0o750, 'echo 2\n']);
  });

  it('a writer killed (SIGKILL) in the middle of rewriting leaves a whole file', async () => {
    const file = join(dir, 'big.txt');
    await writeFile(file, 'A'.repeat(4_000_000));
    const writer = join(dir, 'writer.ts');
    await writeFile(
      writer,
      `import { Workspace } from ${JSON.stringify(join(REPO, 'src/tools/workspace.ts'))};
const ws = new Workspace(process.argv[2]!);
for (let i = 0; ; i++) await ws.writeFile('big.txt', (i % 2 ? 'A' : 'B').repeat(4_000_000), 'replace');\n`,
    );
    for (let round = 0; round < 3; round++) {
      const child = spawnNode(writer, [dir], {});
      await new Promise((r) => setTimeout(r, 600 + round * 170));
      child.kill('SIGKILL');
      await child.exited;
      const content = await readFile(file, 'utf8');
      expect([content.length, new Set(content).size]).toEqual([4_000_000, 1]);
    }
  }, 30_000);
});
