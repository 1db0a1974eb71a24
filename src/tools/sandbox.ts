import { lstat, readlink, stat } from 'node:fs/promises';

/** How `run_command` runs commands: inside bubblewrap, or on the host with no isolation. */
export interface ExecOptions {
  sandbox: 'bwrap' | 'none';
  /** Share the host's network with the sandbox. Without a sandbox nothing blocks the network. */
  network: boolean;
  /** The longest `timeout_s` a call may have. */
  maxTimeoutS: number;
}

/** Where the workspace appears inside the sandbox: a fixed path, so the host's layout and session names stay hidden. */
export const SANDBOX_WORKSPACE = '/workspace';

export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const MiB = 1024 * 1024;

/**
 * Caps inside the sandbox (prlimit, and the size of its /tmp). Each sandbox is a user namespace
 * of its own, so the kernel counts `nproc` over the sandbox's processes only — but never for
 * root: a worker running as root gets no process cap (see checkExecRuntime).
 */
export const SANDBOX_LIMITS = {
  nproc: 256,
  /** Virtual memory per process: room for node, python or a compiler, not for eating the host. */
  addressSpaceBytes: 2048 * MiB,
  fileSizeBytes: 1024 * MiB,
  openFiles: 1024,
  /** /tmp and /dev/shm are memory (tmpfs): without a size each could take half the host's RAM. */
  tmpBytes: 512 * MiB,
  shmBytes: 64 * MiB,
};

/** Top-level folders that are often symlinks into /usr (merged-/usr Debian, Fedora, Arch). */
const ROOT_DIRS = ['/bin', '/lib', '/lib64', '/sbin'];
/** What shells and common tools read from /etc, and nothing of the host's configuration beyond it. */
const ETC_FILES = [
  '/etc/passwd',
  '/etc/group',
  '/etc/nsswitch.conf',
  '/etc/hosts',
  '/etc/localtime',
  '/etc/ld.so.cache',
  '/etc/alternatives',
  // Certificates and OpenSSL's configuration, not /etc/ssl/private.
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
];
const NETWORK_ETC_FILES = ['/etc/resolv.conf'];

/**
 * The host paths the sandbox may show that exist here, each with its symlink target when it is
 * a symlink. /etc entries are bound with their links followed (resolv.conf often points into
 * /run), so only the top-level folders need their targets.
 */
export type HostLayout = ReadonlyMap<string, { symlink?: string }>;

/** A host folder shown read-only inside the sandbox at `target` (an absolute path there). */
export interface SandboxMount {
  host: string;
  target: string;
}

/** The bwrap arguments that run `bash -c command` in the workspace (its real host path). */
export function bwrapArgs(layout: HostLayout, options: { network: boolean; workspace: string; command: string; readOnly?: readonly SandboxMount[] }): string[] {
  const lim = SANDBOX_LIMITS;
  const etc = options.network ? [...ETC_FILES, ...NETWORK_ETC_FILES] : ETC_FILES;
  return [
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(options.network ? [] : ['--unshare-net']),
    // bwrap 0.8: nothing inside may create user namespaces of its own (and in them mount, network
    // and other namespaces: kernel code an unprivileged user otherwise never reaches). Needs --unshare-user.
    '--disable-userns',
    // A worker that dies takes its sandboxes with it; a new session leaves the command no
    // controlling terminal of the worker's to push input into (TIOCSTI).
    '--die-with-parent',
    '--new-session',
    // Root in the sandbox's user namespace would otherwise keep every capability there.
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/usr',
    '/usr',
    ...ROOT_DIRS.flatMap((dir) => {
      const entry = layout.get(dir);
      if (!entry) return [];
      return entry.symlink === undefined ? ['--ro-bind', dir, dir] : ['--symlink', entry.symlink, dir];
    }),
    ...etc.flatMap((file) => (layout.has(file) ? ['--ro-bind', file, file] : [])),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(lim.shmBytes),
    '--tmpfs',
    '/dev/shm',
    '--size',
    String(lim.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--bind',
    options.workspace,
    SANDBOX_WORKSPACE,
    ...(options.readOnly ?? []).flatMap((m) => ['--ro-bind', m.host, m.target]),
    // The root and /dev are unsized tmpfs of bwrap's: read-only, so only the sized ones take writes.
    '--remount-ro',
    '/dev',
    '--remount-ro',
    '/',
    '--chdir',
    SANDBOX_WORKSPACE,
    '--clearenv',
    ...Object.entries(cleanEnv(SANDBOX_WORKSPACE)).flatMap(([name, value]) => ['--setenv', name, value]),
    '--',
    'prlimit',
    `--nproc=${lim.nproc}`,
    `--as=${lim.addressSpaceBytes}`,
    `--fsize=${lim.fileSizeBytes}`,
    `--nofile=${lim.openFiles}`,
    '--',
    'bash',
    '-c',
    options.command,
  ];
}

/** The whole environment a command gets: none of the worker's variables (its tokens and keys). */
export function cleanEnv(home: string): Record<string, string> {
  return { PATH: SANDBOX_PATH, HOME: home, LANG: 'C.UTF-8', TERM: 'dumb' };
}

/** A process to start: program, arguments, working directory and its entire environment. */
export interface CommandSpec {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/** How to run `command` in `workspace` (a real path) under `options.sandbox`; without a sandbox nothing is mounted. */
export function commandSpec(
  options: Pick<ExecOptions, 'sandbox' | 'network'>,
  layout: HostLayout,
  workspace: string,
  command: string,
  readOnly: readonly SandboxMount[] = [],
): CommandSpec {
  if (options.sandbox === 'none') return { file: 'bash', args: ['-c', command], cwd: workspace, env: cleanEnv(workspace) };
  // bwrap is found on the worker's PATH; it clears the environment before the command starts.
  return {
    file: 'bwrap',
    args: bwrapArgs(layout, { network: options.network, workspace, command, readOnly }),
    cwd: '/',
    env: { PATH: process.env.PATH ?? SANDBOX_PATH },
  };
}

let probed: Promise<HostLayout> | undefined;

/** The host's layout, read once per process (it does not change under a running worker). */
export function hostLayout(): Promise<HostLayout> {
  probed ??= probeHostLayout();
  return probed;
}

async function probeHostLayout(): Promise<HostLayout> {
  const layout = new Map<string, { symlink?: string }>();
  for (const dir of ROOT_DIRS) {
    const info = await lstat(dir).catch(() => undefined);
    if (info?.isSymbolicLink()) layout.set(dir, { symlink: await readlink(dir) });
    else if (info?.isDirectory()) layout.set(dir, {});
  }
  for (const file of [...ETC_FILES, ...NETWORK_ETC_FILES]) {
    // stat follows links: a dangling one counts as absent (bwrap would refuse to bind it).
    if (
      await stat(file).then(
        () => true,
        () => false,
      )
    )
      layout.set(file, {});
  }
  return layout;
}
