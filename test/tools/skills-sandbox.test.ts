import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { SkillShelf, skillMounts } from '../../src/profiles/skills.js';
import { createRunCommandTool, type ExecOptions } from '../../src/tools/run-command.js';
import { bwrapArgs, commandSpec, type HostLayout } from '../../src/tools/sandbox.js';
import { Workspace } from '../../src/tools/workspace.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

const BWRAP: ExecOptions = { sandbox: 'bwrap', network: false, maxTimeoutS: 600 };
const LAYOUT: HostLayout = new Map([['/bin', { symlink: 'usr/bin' }]]);
const MOUNTS = [{ host: '/srv/skills/hello', target: '/skills/hello' }];

function bwrapInstalled(): boolean {
  try {
    execFileSync('bwrap', ['--version'], { encoding: 'utf8' });
    return true;
  } catch {
    return false;
  }
}
const hasBwrap = bwrapInstalled();

describe('skills in the sandbox', () => {
  it('bwrap binds each read-only mount right after the workspace, before the root is made read-only', () => {
    const args = bwrapArgs(LAYOUT, { network: false, workspace: '/srv/ws', command: 'true', readOnly: MOUNTS });
    const at = args.indexOf('/workspace');
    expect(args.slice(at - 2, at + 6)).toEqual(['--bind', '/srv/ws', '/workspace', '--ro-bind', '/srv/skills/hello', '/skills/hello', '--remount-ro', '/dev']);
    expect(commandSpec(BWRAP, LAYOUT, '/srv/ws', 'true', MOUNTS).args).toEqual(args);
  });

  it('without a sandbox nothing is mounted', () => {
    expect(commandSpec({ sandbox: 'none', network: false }, LAYOUT, '/srv/ws', 'true', MOUNTS)).toEqual(
      commandSpec({ sandbox: 'none', network: false }, LAYOUT, '/srv/ws', 'true'),
    );
  });

  describe('a real sandbox', () => {
    let sb: Sandbox;
    let skillsDir: string;
    let ws: Workspace;
    beforeEach(async () => {
      sb = await makeSandbox();
      skillsDir = path.join(sb.base, 'skills');
      await fs.mkdir(path.join(skillsDir, 'hello', 'scripts'), { recursive: true });
      await fs.writeFile(path.join(skillsDir, 'hello', 'SKILL.md'), '---\nname: hello\ndescription: Says hello.\n---\nRun scripts/hello.sh.\n');
      await fs.writeFile(path.join(skillsDir, 'hello', 'scripts', 'hello.sh'), 'echo "hello from $(basename "$(dirname "$0")")"\n');
      const shelf = await SkillShelf.open([skillsDir], { promptTokens: 1000, log: createLogger('silent'), label: 'helper' });
      ws = new Workspace(sb.root, { readOnly: skillMounts(await shelf.current()) });
    });
    afterEach(async () => {
      await sb.cleanup();
    });

    const run = (command: string) => createRunCommandTool(ws, BWRAP).execute({ command }, { signal: sb.signal });

    it.skipIf(!hasBwrap)('runs a skill script at /skills/<name>, and the skill folder cannot be written', async () => {
      const before = await fs.readdir(path.join(skillsDir, 'hello'), { recursive: true });
      expect(await run('bash /skills/hello/scripts/hello.sh')).toBe('hello from scripts\n[exit code 0]');

      const touched = await run('touch /skills/hello/new.txt');
      expect(touched).toMatch(/Read-only file system/);
      expect(touched).toMatch(/\[exit code 1\]$/);
      expect(await run('echo x > /skills/hello/scripts/hello.sh; rm -f /skills/hello/SKILL.md')).toMatch(/Read-only file system/);

      expect(await fs.readdir(path.join(skillsDir, 'hello'), { recursive: true })).toEqual(before);
      expect(await fs.readFile(path.join(skillsDir, 'hello', 'SKILL.md'), 'utf8')).toContain('name: hello');
      // The workspace itself stays writable.
      expect(await run('echo ok > note.txt && cat note.txt')).toBe('ok\n[exit code 0]');
    });
  });
});
