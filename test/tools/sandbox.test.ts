import { lstat, readlink } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { bwrapArgs, cleanEnv, commandSpec, hostLayout, SANDBOX_LIMITS, SANDBOX_PATH, type HostLayout } from '../../src/tools/sandbox.js';

/** A merged-/usr host (Debian 12): /bin, /lib, /lib64, /sbin are symlinks into /usr; no /etc/alternatives. */
const DEBIAN: HostLayout = new Map([
  ['/bin', { symlink: 'usr/bin' }],
  ['/lib', { symlink: 'usr/lib' }],
  ['/lib64', { symlink: 'usr/lib64' }],
  ['/sbin', { symlink: 'usr/sbin' }],
  ['/etc/passwd', {}],
  ['/etc/group', {}],
  ['/etc/hosts', {}],
  ['/etc/ld.so.cache', {}],
  ['/etc/ssl/certs', {}],
  ['/etc/resolv.conf', {}],
]);

const WS = '/srv/data/workspaces/telegram%3A42';

/** Values after the options that take host paths. */
function hostPathsOf(args: string[]): string[] {
  const paths: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--') break;
    if (args[i] === '--ro-bind' || args[i] === '--bind') paths.push(args[i + 1]!);
  }
  return paths;
}

describe('bwrapArgs', () => {
  it('builds the whole sandbox: namespaces, a read-only /usr, a minimal /etc, the workspace, a clean environment, prlimit and bash -c', () => {
    expect(bwrapArgs(DEBIAN, { network: false, workspace: WS, command: 'ls -la' })).toEqual([
      '--unshare-user',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--unshare-net',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
      '--ro-bind',
      '/usr',
      '/usr',
      '--symlink',
      'usr/bin',
      '/bin',
      '--symlink',
      'usr/lib',
      '/lib',
      '--symlink',
      'usr/lib64',
      '/lib64',
      '--symlink',
      'usr/sbin',
      '/sbin',
      '--ro-bind',
      '/etc/passwd',
      '/etc/passwd',
      '--ro-bind',
      '/etc/group',
      '/etc/group',
      '--ro-bind',
      '/etc/hosts',
      '/etc/hosts',
      '--ro-bind',
      '/etc/ld.so.cache',
      '/etc/ld.so.cache',
      '--ro-bind',
      '/etc/ssl/certs',
      '/etc/ssl/certs',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--size',
      String(64 * 1024 * 1024),
      '--tmpfs',
      '/dev/shm',
      '--size',
      String(512 * 1024 * 1024),
      '--tmpfs',
      '/tmp',
      '--bind',
      WS,
      '/workspace',
      '--remount-ro',
      '/dev',
      '--remount-ro',
      '/',
      '--chdir',
      '/workspace',
      '--clearenv',
      '--setenv',
      'PATH',
      SANDBOX_PATH,
      '--setenv',
      'HOME',
      '/workspace',
      '--setenv',
      'LANG',
      'C.UTF-8',
      '--setenv',
      'TERM',
      'dumb',
      '--',
      'prlimit',
      '--nproc=256',
      `--as=${2 * 1024 ** 3}`,
      `--fsize=${1024 ** 3}`,
      '--nofile=1024',
      '--',
      'bash',
      '-c',
      'ls -la',
    ]);
  });

  it('with the network: no --unshare-net, and /etc/resolv.conf for DNS', () => {
    const args = bwrapArgs(DEBIAN, { network: true, workspace: WS, command: 'true' });
    expect(args).not.toContain('--unshare-net');
    expect(hostPathsOf(args)).toContain('/etc/resolv.conf');
    expect(hostPathsOf(bwrapArgs(DEBIAN, { network: false, workspace: WS, command: 'true' }))).not.toContain('/etc/resolv.conf');
  });

  it('binds real top-level folders instead of linking them, and leaves out what the host lacks', () => {
    const split: HostLayout = new Map([
      ['/bin', {}],
      ['/lib', {}],
      ['/etc/passwd', {}],
    ]);
    const args = bwrapArgs(split, { network: false, workspace: WS, command: 'true' });
    expect(hostPathsOf(args)).toEqual(['/usr', '/bin', '/lib', '/etc/passwd', WS]);
    expect(args).not.toContain('--symlink');
    expect(args).not.toContain('/lib64');
    expect(args).not.toContain('/sbin');
  });

  it('shows no host path beyond /usr, the listed system folders and /etc files, and the workspace (read-write only that)', () => {
    const everything: HostLayout = new Map(
      [
        '/bin',
        '/lib',
        '/lib64',
        '/sbin',
        '/etc/passwd',
        '/etc/group',
        '/etc/nsswitch.conf',
        '/etc/hosts',
        '/etc/localtime',
        '/etc/ld.so.cache',
        '/etc/alternatives',
        '/etc/ssl/certs',
        '/etc/ssl/openssl.cnf',
        '/etc/ca-certificates',
        '/etc/resolv.conf',
      ].map((p) => [p, {}]),
    );
    for (const network of [false, true]) {
      const args = bwrapArgs(everything, { network, workspace: WS, command: 'true' });
      const allowed = new Set([...everything.keys(), '/usr', WS]);
      if (!network) allowed.delete('/etc/resolv.conf');
      expect(new Set(hostPathsOf(args))).toEqual(allowed);
      // The only writable bind is the workspace.
      expect(args.filter((a) => a === '--bind')).toHaveLength(1);
      expect(args[args.indexOf('--bind') + 1]).toBe(WS);
      for (const forbidden of ['/root', '/home', '/etc', '/etc/ssl', '/etc/ssl/private', '/run', '/var', '/work', '/srv/data/workspaces', '/opt'])
        expect(args).not.toContain(forbidden);
    }
  });

  it('passes the command as one argument, never through a shell of ours', () => {
    const command = `echo "$HOME" '; rm -rf /' && exit 3`;
    const args = bwrapArgs(DEBIAN, { network: false, workspace: WS, command });
    expect(args.at(-1)).toBe(command);
    expect(args.slice(-3, -1)).toEqual(['bash', '-c']);
  });

  it('the limits are whole numbers prlimit takes', () => {
    for (const value of Object.values(SANDBOX_LIMITS)) expect(Number.isSafeInteger(value) && value > 0).toBe(true);
  });
});

describe('commandSpec', () => {
  it('bwrap gets only PATH from the worker, and the sandbox only the clean variables', () => {
    process.env.SB_SPEC_SECRET = 'spec-secret';
    try {
      const spec = commandSpec({ sandbox: 'bwrap', network: false }, DEBIAN, WS, 'env');
      expect(spec.file).toBe('bwrap');
      expect(Object.keys(spec.env)).toEqual(['PATH']);
      expect(JSON.stringify(spec)).not.toContain('spec-secret');
    } finally {
      delete process.env.SB_SPEC_SECRET;
    }
  });

  it('none runs bash -c on the host in the workspace with the clean environment', () => {
    expect(commandSpec({ sandbox: 'none', network: false }, DEBIAN, WS, 'make test')).toEqual({
      file: 'bash',
      args: ['-c', 'make test'],
      cwd: WS,
      env: { PATH: SANDBOX_PATH, HOME: WS, LANG: 'C.UTF-8', TERM: 'dumb' },
    });
    expect(cleanEnv('/h')).toEqual({ PATH: SANDBOX_PATH, HOME: '/h', LANG: 'C.UTF-8', TERM: 'dumb' });
  });
});

describe('hostLayout', () => {
  it('reads this host: symlinks with their targets, real folders as folders', async () => {
    const layout = await hostLayout();
    for (const dir of ['/bin', '/lib', '/lib64', '/sbin']) {
      const info = await lstat(dir).catch(() => undefined);
      if (!info) expect(layout.has(dir)).toBe(false);
      else if (info.isSymbolicLink()) expect(layout.get(dir)).toEqual({ symlink: await readlink(dir) });
      else expect(layout.get(dir)).toEqual({});
    }
    expect(layout.has('/etc/passwd')).toBe(true);
    expect(await hostLayout()).toBe(layout);
  });
});
