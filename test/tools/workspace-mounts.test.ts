import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEditFileTool } from '../../src/tools/edit-file.js';
import { createListFilesTool } from '../../src/tools/list-files.js';
import { createReadFileTool } from '../../src/tools/read-file.js';
import { ToolError } from '../../src/tools/types.js';
import { Workspace } from '../../src/tools/workspace.js';
import { createWriteFileTool } from '../../src/tools/write-file.js';
import { makeSandbox, SENTINEL_TEXT, type Sandbox } from './sandbox.js';

let sb: Sandbox;
/** The host folder of skill `hello`, outside the workspace. */
let skillDir: string;
let ws: Workspace;
beforeEach(async () => {
  sb = await makeSandbox();
  skillDir = path.join(sb.base, 'installed', 'hello');
  await fs.mkdir(path.join(skillDir, 'scripts'), { recursive: true });
  await fs.writeFile(path.join(skillDir, 'SKILL.md'), '---\nname: hello\ndescription: Hi.\n---\nSay hi.\n');
  await fs.writeFile(path.join(skillDir, 'ref.md'), 'reference text\n');
  await fs.writeFile(path.join(skillDir, 'scripts', 'hello.sh'), 'echo hello\n');
  ws = new Workspace(sb.root, { readOnly: [{ at: 'skills/hello', dir: skillDir }] });
});
afterEach(async () => {
  await sb.cleanup();
});

/** Every file of the skill folder with its content, to compare before and after. */
async function skillSnapshot(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await fs.readdir(skillDir, { recursive: true, withFileTypes: true })) {
    const abs = path.join(entry.parentPath, entry.name);
    out[path.relative(skillDir, abs)] = entry.isFile() ? await fs.readFile(abs, 'utf8') : '<dir>';
  }
  return out;
}

const ctx = () => ({ signal: sb.signal });

describe('a read-only mount in the workspace', () => {
  it('read_file and list_files see the skill folder at skills/<name>, shown at that path', async () => {
    expect(await createReadFileTool(ws).execute({ path: 'skills/hello/ref.md' }, ctx())).toBe('reference text');
    expect(await createReadFileTool(ws).execute({ path: 'skills/hello/../hello/scripts/hello.sh' }, ctx())).toBe('echo hello');
    expect(await createListFilesTool(ws).execute({ path: 'skills/hello', recursive: true }, ctx())).toBe(
      ['skills/hello/SKILL.md', 'skills/hello/ref.md', 'skills/hello/scripts/', 'skills/hello/scripts/hello.sh'].join('\n'),
    );
    expect(await ws.resolve('skills/hello')).toBe(skillDir);
    expect(ws.relative(path.join(skillDir, 'scripts'))).toBe('skills/hello/scripts');
    expect(ws.readOnlyMounts).toEqual([{ at: 'skills/hello', dir: skillDir }]);
  });

  it('write_file, edit_file, removeFile and makeFolder inside the mount, or on the folder holding it, are refused', async () => {
    const before = await skillSnapshot();
    const refusals = [
      () => createWriteFileTool(ws).execute({ path: 'skills/hello/ref.md', content: 'changed' }, ctx()),
      () => createWriteFileTool(ws).execute({ path: 'skills/hello/new.md', content: 'new' }, ctx()),
      () => createWriteFileTool(ws).execute({ path: 'skills/hello', content: 'x' }, ctx()),
      () => createWriteFileTool(ws).execute({ path: 'skills', content: 'x' }, ctx()),
      () => createEditFileTool(ws).execute({ path: 'skills/hello/ref.md', old_text: 'reference', new_text: 'changed' }, ctx()),
      () => ws.removeFile('skills/hello/ref.md'),
      () => ws.makeFolder('skills/hello/sub'),
      () => ws.makeFolder('skills/'),
    ];
    for (const refusal of refusals) await expect(refusal()).rejects.toBeInstanceOf(ToolError);
    await expect(ws.removeFile('./skills/hello/scripts/hello.sh')).rejects.toThrow(
      './skills/hello/scripts/hello.sh is inside skills/hello, which is read-only; copy what you need elsewhere in the workspace',
    );
    await expect(ws.makeFolder('skills')).rejects.toThrow('skills holds read-only folders (skills/hello); write elsewhere in the workspace');
    expect(await skillSnapshot()).toEqual(before);
    expect(await fs.readdir(sb.root)).toEqual([]);
  });

  it('a file beside the mounts, e.g. skills/notes.md, is an ordinary workspace file', async () => {
    await createWriteFileTool(ws).execute({ path: 'skills/notes.md', content: 'mine' }, ctx());
    expect(await sb.read('skills/notes.md')).toBe('mine');
    expect(await createListFilesTool(ws).execute({ path: 'skills' }, ctx())).toBe('skills/notes.md');
  });

  it('a symlink inside the mount that points out of it is refused', async () => {
    await fs.symlink(sb.sentinel, path.join(skillDir, 'escape.md'));
    await fs.symlink('../../../outside', path.join(skillDir, 'scripts', 'up'));
    await fs.symlink('ref.md', path.join(skillDir, 'alias.md'));
    await expect(createReadFileTool(ws).execute({ path: 'skills/hello/escape.md' }, ctx())).rejects.toThrow(
      'skills/hello/escape.md is outside skills/hello (through a symlink)',
    );
    await expect(createReadFileTool(ws).execute({ path: 'skills/hello/scripts/up/secret.txt' }, ctx())).rejects.toThrow(
      'is outside skills/hello (through a symlink)',
    );
    // A link that stays inside the skill folder is fine.
    expect(await createReadFileTool(ws).execute({ path: 'skills/hello/alias.md' }, ctx())).toBe('reference text');
  });

  it('".." cannot climb out of the mount: the path is normalised first and ends in the workspace or is refused', async () => {
    await expect(ws.resolve('skills/hello/../../../outside/secret.txt')).rejects.toThrow('is outside the workspace');
    await expect(ws.resolve('skills/x/../../../etc/passwd')).rejects.toThrow('is outside the workspace');
    // skills/x/../../etc is the workspace's own etc, not the host's and not the skill's.
    expect(await ws.resolve('skills/x/../../etc')).toBe(path.join(sb.root, 'etc'));
    await expect(createReadFileTool(ws).execute({ path: 'skills/x/../../etc/passwd' }, ctx())).rejects.toThrow('etc/passwd does not exist');
    expect(await ws.resolve('skills/hello/scripts/../..')).toBe(path.join(sb.root, 'skills'));
    expect(await sb.outsideSnapshot()).toEqual({ 'secret.txt': SENTINEL_TEXT });
  });

  it('a mount must sit at a normalised relative path, from an absolute folder', () => {
    for (const at of ['', '.', '..', '../x', '/skills/x', 'skills/./x', 'skills/x/']) {
      expect(() => new Workspace(sb.root, { readOnly: [{ at, dir: skillDir }] })).toThrow('normalised relative path');
    }
    expect(() => new Workspace(sb.root, { readOnly: [{ at: 'skills/x', dir: 'rel/dir' }] })).toThrow('absolute path');
    expect(Workspace.forScope(sb.root, 'telegram:1', { readOnly: [{ at: 'skills/hello', dir: skillDir }] }).readOnlyMounts).toHaveLength(1);
  });
});
