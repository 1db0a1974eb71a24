// scripts/build.mjs (the build step of npm start): rebuilds what changed, and only that. Runs on a
// small project in a temporary folder with the repo's own tsconfig files, never on the repo's dist/.
// One project for the file (each tsc run costs seconds): the cases run in order, each from where
// the one before left it.
import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/processes.js';

let dir: string;

function build(): { code: number | null; output: string } {
  const r = spawnSync(process.execPath, [join(dir, 'scripts/build.mjs')], { cwd: dir, encoding: 'utf8' });
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Every file in dist/ with its size, mtime and inode: any write shows up as a difference. */
async function distFiles(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of await readdir(join(dir, 'dist'), { recursive: true })) {
    const s = await stat(join(dir, 'dist', name));
    if (s.isFile()) out[name] = `${s.size}:${s.mtimeMs}:${s.ino}`;
  }
  return out;
}

const read = (p: string) => readFile(join(dir, p), 'utf8');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sb-build-'));
  for (const f of ['tsconfig.json', 'tsconfig.build.json', 'package.json']) await cp(join(REPO, f), join(dir, f));
  await mkdir(join(dir, 'scripts'));
  await cp(join(REPO, 'scripts/build.mjs'), join(dir, 'scripts/build.mjs'));
  await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
  await mkdir(join(dir, 'src/cli'), { recursive: true });
  await writeFile(join(dir, 'src/greeting.ts'), 'export const greeting = (name: string): string => `hello ${name}`;\n');
  await writeFile(join(dir, 'src/cli/main.ts'), "import { greeting } from '../greeting.js';\nconsole.log(greeting('world'));\n");
  expect(build().code).toBe(0);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('npm start: the build step', () => {
  it('a clean clone builds dist/ with a runnable entry point', async () => {
    const run = spawnSync(process.execPath, ['dist/cli/main.js'], { cwd: dir, encoding: 'utf8' });
    expect(run.stdout).toBe('hello world\n');
    expect(Object.keys(await distFiles()).sort()).toEqual([
      '.build-stamp.json',
      '.tsbuildinfo',
      'cli/main.js',
      'cli/main.js.map',
      'greeting.js',
      'greeting.js.map',
    ]);
  });

  it('with nothing changed it writes no file in dist/', async () => {
    const before = await distFiles();
    expect(build()).toEqual({ code: 0, output: '' });
    expect(await distFiles()).toEqual(before);
  });

  it('a changed source updates its own output and leaves the others alone', async () => {
    const before = await distFiles();
    await writeFile(join(dir, 'src/cli/main.ts'), "import { greeting } from '../greeting.js';\nconsole.log(greeting('there'));\n");
    expect(build().code).toBe(0);
    expect(await read('dist/cli/main.js')).toContain("greeting('there')");
    const after = await distFiles();
    expect(after['cli/main.js']).not.toBe(before['cli/main.js']);
    expect(after['greeting.js']).toBe(before['greeting.js']);
    expect(after['greeting.js.map']).toBe(before['greeting.js.map']);
  });

  it('a source touched but not changed rewrites no output', async () => {
    const before = await distFiles();
    const now = new Date();
    await utimes(join(dir, 'src/greeting.ts'), now, new Date(now.getTime() + 5_000));
    expect(build().code).toBe(0);
    const after = await distFiles();
    for (const f of ['greeting.js', 'greeting.js.map', 'cli/main.js']) expect(after[f]).toBe(before[f]);
  });

  it('an output deleted while the buildinfo survives is emitted again', async () => {
    await rm(join(dir, 'dist/greeting.js'));
    await rm(join(dir, 'dist/cli/main.js.map'));
    expect(build().code).toBe(0);
    expect(await read('dist/greeting.js')).toContain('hello');
    expect(JSON.parse(await read('dist/cli/main.js.map')).sources).toEqual(['../../src/cli/main.ts']);
  });

  it('an output edited by hand is replaced with what the source compiles to', async () => {
    await writeFile(join(dir, 'dist/greeting.js'), 'export const greeting = () => "stale";\n');
    expect(build().code).toBe(0);
    expect(await read('dist/greeting.js')).toContain('hello');
  });

  it('a deleted dist/ (buildinfo with it) is rebuilt in full', async () => {
    await rm(join(dir, 'dist'), { recursive: true });
    expect(build().code).toBe(0);
    expect(Object.keys(await distFiles()).sort()).toEqual([
      '.build-stamp.json',
      '.tsbuildinfo',
      'cli/main.js',
      'cli/main.js.map',
      'greeting.js',
      'greeting.js.map',
    ]);
  });

  it('the output of a deleted source is removed', async () => {
    await writeFile(join(dir, 'src/extra.ts'), 'export const extra = 1;\n');
    expect(build().code).toBe(0);
    expect(Object.keys(await distFiles())).toContain('extra.js');
    await rm(join(dir, 'src/extra.ts'));
    expect(build().code).toBe(0);
    expect(Object.keys(await distFiles())).not.toContain('extra.js');
    expect(Object.keys(await distFiles())).not.toContain('extra.js.map');
  });

  it('a type error fails the build (npm start does not run), and fails again until fixed', async () => {
    await writeFile(join(dir, 'src/greeting.ts'), 'export const greeting = (name: string): number => name;\n');
    const first = build();
    expect(first.code).not.toBe(0);
    expect(first.output).toContain('greeting.ts');
    expect(build().code).not.toBe(0);
    await writeFile(join(dir, 'src/greeting.ts'), 'export const greeting = (name: string): string => `hi ${name}`;\n');
    expect(build().code).toBe(0);
    expect(await read('dist/greeting.js')).toContain('hi ');
  });
}, 120_000);
