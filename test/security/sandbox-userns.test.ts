import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkExecRuntime } from '../../src/tools/exec.js';
import { bwrapArgs, type HostLayout } from '../../src/tools/sandbox.js';
import { createRunCommandTool, type ExecOptions } from '../../src/tools/run-command.js';
import { makeSandbox, type Sandbox } from '../tools/sandbox.js';

/**
 * Finding (medium): a command in the bwrap sandbox could create user namespaces of its own
 * (`unshare --user`), and in them mount, network and other namespaces: kernel code unprivileged
 * users otherwise never reach, the usual way into a kernel bug. bwrap ≥ 0.8 `--disable-userns`
 * (with the `--unshare-user` it needs) takes that away from everything inside the sandbox.
 */
const BWRAP: ExecOptions = { sandbox: 'bwrap', network: false, maxTimeoutS: 600 };
const LAYOUT: HostLayout = new Map([
  ['/bin', { symlink: 'usr/bin' }],
  ['/etc/passwd', {}],
]);

function bwrapVersion(): string | undefined {
  try {
    return execFileSync('bwrap', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}
const version = bwrapVersion();

describe('security: the sandbox cannot make user namespaces of its own', () => {
  it('bwrap gets --disable-userns, after the --unshare-user it requires, with and without the network', () => {
    for (const network of [false, true]) {
      const args = bwrapArgs(LAYOUT, { network, workspace: '/srv/ws', command: 'true' });
      const options = args.slice(0, args.indexOf('--'));
      expect(options).toContain('--disable-userns');
      expect(options.indexOf('--unshare-user')).toBeGreaterThanOrEqual(0);
      expect(options.indexOf('--unshare-user')).toBeLessThan(options.indexOf('--disable-userns'));
    }
  });

  it('a bubblewrap too old for the flag (0.7 and before) fails the start-up check, which names the version needed', async () => {
    const sb = await makeSandbox();
    const saved = process.env.PATH;
    try {
      const bin = path.join(sb.base, 'old-bwrap');
      await mkdir(bin);
      // What bubblewrap 0.7 says.
      await writeFile(path.join(bin, 'bwrap'), `#!/bin/sh\necho 'bwrap: Unknown option --disable-userns' >&2\nexit 1\n`, { mode: 0o755 });
      process.env.PATH = bin;
      const check = await checkExecRuntime(BWRAP);
      expect(check).toEqual({
        ok: false,
        error: expect.stringContaining(
          '(bwrap: Unknown option --disable-userns): this bubblewrap is too old: commands need 0.8 or later (for --disable-userns)',
        ),
      });
    } finally {
      process.env.PATH = saved;
      await sb.cleanup();
    }
  });

  describe.skipIf(version === undefined)(`a real sandbox (${version ?? 'bwrap is not installed on this machine: skipped'})`, () => {
    let sb: Sandbox;
    beforeEach(async () => {
      sb = await makeSandbox();
    });
    afterEach(async () => {
      await sb.cleanup();
    });
    const run = (command: string) => createRunCommandTool(sb.ws, BWRAP).execute({ command }, { signal: sb.signal });

    it('unshare --user (and -U with a mount namespace) fails inside; the sandbox itself works', async () => {
      expect(await run('echo inside; id -u')).toMatch(/^inside\n\d+\n\[exit code 0\]$/);
      const user = await run('unshare --user true; echo "rc=$?"');
      expect(user).toMatch(/rc=1\b/);
      expect(user).toMatch(/unshare failed/);
      const mount = await run('unshare -U -m --map-root-user id; echo "rc=$?"');
      expect(mount).toMatch(/rc=1\b/);
      expect(mount).not.toMatch(/uid=0/);
    });
  });
});
