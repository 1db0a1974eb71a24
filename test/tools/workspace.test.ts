import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/tools/types.js';
import { Workspace, workspaceFolderName } from '../../src/tools/workspace.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(async () => {
  await sb.cleanup();
});

async function refusal(ws: Workspace, input: string): Promise<string> {
  const err = await ws.resolve(input).then(
    (abs) => {
      throw new Error(`expected a refusal, resolved to ${abs}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return (err as ToolError).message;
}

describe('Workspace.resolve', () => {
  it('resolves relative paths inside the root, existing or not', async () => {
    await sb.write('notes/a.md', 'x');
    expect(await sb.ws.resolve('notes/a.md')).toBe(path.join(sb.root, 'notes/a.md'));
    expect(await sb.ws.resolve('./notes//a.md')).toBe(path.join(sb.root, 'notes/a.md'));
    expect(await sb.ws.resolve('notes/new/deep.txt')).toBe(path.join(sb.root, 'notes/new/deep.txt'));
    expect(await sb.ws.resolve('notes/../b.txt')).toBe(path.join(sb.root, 'b.txt'));
    expect(await sb.ws.resolve('.')).toBe(sb.root);
    expect(await sb.ws.resolve('notes/')).toBe(path.join(sb.root, 'notes'));
  });

  it('creates the root on demand', async () => {
    const ws = new Workspace(path.join(sb.base, 'later', 'root'));
    expect(await ws.resolve('a.txt')).toBe(path.join(sb.base, 'later', 'root', 'a.txt'));
    expect((await fs.stat(path.join(sb.base, 'later', 'root'))).isDirectory()).toBe(true);
  });

  it('refuses paths that leave the root lexically', async () => {
    expect(await refusal(sb.ws, '../x')).toBe('../x is outside the workspace');
    expect(await refusal(sb.ws, 'a/../../x')).toBe('a/../../x is outside the workspace');
    expect(await refusal(sb.ws, '..')).toBe('.. is outside the workspace');
    expect(await refusal(sb.ws, '/etc/passwd')).toMatch(/^\/etc\/passwd is an absolute path/);
    expect(await refusal(sb.ws, '~/notes')).toMatch(/"~" is not expanded/);
  });

  it('refuses NUL bytes and empty paths', async () => {
    expect(await refusal(sb.ws, 'a\0b')).toBe('path contains a NUL byte');
    expect(await refusal(sb.ws, '')).toBe('path is empty; use "." for the workspace root');
    expect(await refusal(sb.ws, '  ')).toBe('path is empty; use "." for the workspace root');
  });

  it('refuses a symlink pointing outside, and anything beneath a symlinked outside directory', async () => {
    await fs.symlink(sb.sentinel, path.join(sb.root, 'link.txt'));
    await fs.symlink(sb.outside, path.join(sb.root, 'outdir'));
    expect(await refusal(sb.ws, 'link.txt')).toBe('link.txt is outside the workspace (through a symlink)');
    expect(await refusal(sb.ws, 'outdir/secret.txt')).toMatch(/outside the workspace/);
    expect(await refusal(sb.ws, 'outdir/not-yet/new.txt')).toMatch(/outside the workspace/);
  });

  it('refuses a dangling symlink, whose target could be created anywhere', async () => {
    await fs.symlink(path.join(sb.outside, 'missing.txt'), path.join(sb.root, 'dangling'));
    expect(await refusal(sb.ws, 'dangling')).toMatch(/broken symlink/);
  });

  it('follows symlinks that stay inside the root', async () => {
    await sb.write('real/a.txt', 'x');
    await fs.symlink(path.join(sb.root, 'real'), path.join(sb.root, 'alias'));
    expect(await sb.ws.resolve('alias/a.txt')).toBe(path.join(sb.root, 'real/a.txt'));
    expect(await sb.ws.resolve('alias/new.txt')).toBe(path.join(sb.root, 'real/new.txt'));
  });

  it('works when the root itself is reached through a symlink', async () => {
    await fs.symlink(sb.root, path.join(sb.base, 'root-alias'));
    const ws = new Workspace(path.join(sb.base, 'root-alias'));
    expect(await ws.resolve('a.txt')).toBe(path.join(sb.root, 'a.txt'));
    expect(ws.relative(path.join(sb.root, 'dir/a.txt'))).toBe('dir/a.txt');
  });

  it('requires an absolute root', () => {
    expect(() => new Workspace('relative/root')).toThrow(/absolute/);
  });
});

describe('Workspace.relative', () => {
  it('shows paths relative to the root with "/" separators', async () => {
    const abs = await sb.ws.resolve('notes/a.md');
    expect(sb.ws.relative(abs)).toBe('notes/a.md');
    expect(sb.ws.relative(sb.root)).toBe('.');
  });
});

describe('workspaceFolderName', () => {
  it('percent-encodes everything outside [A-Za-z0-9._-], reversibly', () => {
    const scopes = ['telegram:12345', 'slack:T1:C2:1700000000.000100', 'discord:1/2', 'terminal:ünï cødé', 'a%3Ab'];
    for (const scope of scopes) {
      const name = workspaceFolderName(scope);
      expect(name).toMatch(/^[A-Za-z0-9._%-]+$/);
      expect(decodeURIComponent(name)).toBe(scope);
    }
    expect(workspaceFolderName('telegram:12345')).toBe('telegram%3A12345');
    expect(workspaceFolderName('slack:T1:C2:1700000000.000100')).toBe('slack%3AT1%3AC2%3A1700000000.000100');
  });

  it('keeps distinct scopes distinct', () => {
    expect(workspaceFolderName('a:b')).not.toBe(workspaceFolderName('a%3Ab'));
    expect(workspaceFolderName('a/b')).not.toBe(workspaceFolderName('a_b'));
  });

  it('never yields "." or ".."', () => {
    expect(workspaceFolderName('.')).toBe('%2E');
    expect(workspaceFolderName('..')).toBe('%2E%2E');
    expect(() => workspaceFolderName('')).toThrow(/empty/);
  });

  it('bounds long names with a hash suffix that keeps them distinct', () => {
    const a = workspaceFolderName(`slack:${'x'.repeat(300)}:1`);
    const b = workspaceFolderName(`slack:${'x'.repeat(300)}:2`);
    expect(a.length).toBeLessThanOrEqual(200);
    expect(a).toMatch(/~[0-9a-f]{40}$/);
    expect(a).not.toBe(b);
  });

  it('forScope puts the session in one folder under the root', async () => {
    const ws = Workspace.forScope(sb.base, 'slack:T1:C2');
    expect(ws.root).toBe(path.join(sb.base, 'slack%3AT1%3AC2'));
    expect(Workspace.forScope(sb.base, '..').root).toBe(path.join(sb.base, '%2E%2E'));
  });
});
