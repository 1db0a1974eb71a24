import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkExecRuntime } from '../../src/tools/exec.js';
import { buildTools } from '../../src/tools/index.js';
import { OUTPUT_CAP_BYTES, OutputCap } from '../../src/tools/output-cap.js';
import { runToolCall } from '../../src/tools/run.js';
import { createRunCommandTool, type ExecOptions } from '../../src/tools/run-command.js';
import { ToolError } from '../../src/tools/types.js';
import { REPO } from '../helpers/processes.js';
import { makeSandbox, SENTINEL_TEXT, type Sandbox } from './sandbox.js';

const BWRAP: ExecOptions = { sandbox: 'bwrap', network: false, maxTimeoutS: 600 };
const NONE: ExecOptions = { sandbox: 'none', network: false, maxTimeoutS: 600 };

let sb: Sandbox;
/** Markers (unique argv[0]s) of the processes this test started, to prove them gone and to clean up. */
let markers: string[];
beforeEach(async () => {
  sb = await makeSandbox();
  markers = [];
});
afterEach(async () => {
  for (const marker of markers) for (const pid of await pidsWith(marker)) process.kill(pid, 'SIGKILL');
  await sb.cleanup();
});

function marker(): string {
  const m = `sbmark-${randomUUID()}`;
  markers.push(m);
  return m;
}

/** Host pids whose argv[0] is `marker` (zombies have no command line, so they do not count). */
async function pidsWith(marker: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0')[0] === marker) found.push(Number(name));
  }
  return found;
}

async function until(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const run = (command: string, options: ExecOptions = BWRAP, extra: { timeout_s?: number; signal?: AbortSignal } = {}) =>
  createRunCommandTool(sb.ws, options).execute({ command, timeout_s: extra.timeout_s }, { signal: extra.signal ?? sb.signal });

describe('run_command in bwrap', () => {
  it('runs bash -c in the workspace, which is /workspace and HOME, and writes land in the session folder', async () => {
    await sb.write('notes.txt', 'hello\n');
    const out = await run('pwd; echo "$HOME"; cat notes.txt; echo made > made.txt; ls');
    expect(out).toBe('/workspace\n/workspace\nhello\nmade.txt\nnotes.txt\n[exit code 0]');
    expect(await sb.read('made.txt')).toBe('made\n');
  });

  it('cannot see files outside the workspace: another session, the project, /root, /home, the host /tmp', async () => {
    const other = path.join(sb.base, 'other-session');
    await mkdir(other);
    await writeFile(path.join(other, 'canary.txt'), 'other session canary\n');
    const paths = [sb.sentinel, path.join(other, 'canary.txt'), path.join(REPO, 'package.json'), path.join(REPO, '.env'), '/root', '/home'];
    const out = await run(`for p in ${paths.map((p) => `'${p}'`).join(' ')}; do cat "$p" 2>&1 || true; done; ls -A /tmp; ls /`);
    expect(out).not.toContain('other session canary');
    expect(out).not.toContain(SENTINEL_TEXT.trim());
    expect(out).not.toContain('"name": "switchboard"');
    expect(out.match(/No such file or directory/g)).toHaveLength(paths.length);
    // `ls -A /tmp` printed nothing: the sandbox's /tmp is empty, then the root listing.
    expect(out.split('\n').slice(paths.length, -1)).toEqual(['bin', 'dev', 'etc', 'lib', 'lib64', 'proc', 'sbin', 'tmp', 'usr', 'workspace']);
    expect(await sb.outsideSnapshot()).toEqual({ 'secret.txt': SENTINEL_TEXT });
  });

  it('writes only to the workspace and the sized /tmp and /dev/shm', async () => {
    const out = await run(
      'for p in /usr/x /etc/passwd /x /etc/x /dev/x; do touch $p 2>&1 | grep -c "Read-only file system"; done; touch /tmp/x /dev/shm/x && echo ok; df -k /tmp /dev/shm | tail -2',
    );
    const lines = out.split('\n');
    expect(lines.slice(0, 6)).toEqual(['1', '1', '1', '1', '1', 'ok']);
    expect(lines[6]).toMatch(/^tmpfs\s+524288\s/);
    expect(lines[7]).toMatch(/^tmpfs\s+65536\s/);
  });

  it("gets a clean environment: none of the worker's variables", async () => {
    const secret = `sb-secret-${randomUUID()}`;
    process.env.SB_TEST_SECRET = secret;
    try {
      const out = await run('env | sort');
      expect(out).not.toContain(secret);
      const names = out
        .split('\n')
        .slice(0, -1)
        .map((line) => line.split('=')[0]);
      expect(names).toEqual(['HOME', 'LANG', 'PATH', 'PWD', 'SHLVL', 'TERM', '_']);
    } finally {
      delete process.env.SB_TEST_SECRET;
    }
  });

  describe('the network', () => {
    let server: Server;
    let connections: number;
    let port: number;
    beforeEach(async () => {
      connections = 0;
      server = createServer((socket) => {
        connections++;
        socket.end('hi from the host\n');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterEach(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it('is off: a loopback port of the host is unreachable', async () => {
      const out = await run(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`);
      expect(out).not.toContain('connected');
      expect(out).toMatch(/\[exit code 1\]$/);
      expect(connections).toBe(0);
    });

    it('is on with network: true', async () => {
      const out = await run(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected && cat <&3`, { ...BWRAP, network: true });
      expect(out).toBe('connected\nhi from the host\n[exit code 0]');
      expect(connections).toBe(1);
    });
  });

  it('a timeout kills the command and everything it started', async () => {
    const m = marker();
    const started = Date.now();
    const result = run(`(exec -a ${m} sleep 1000) & echo started; sleep 1000`, BWRAP, { timeout_s: 1 });
    await until(async () => (await pidsWith(m)).length === 1);
    expect(await result).toBe('started\n[timed out after 1 s: the command and everything it started were killed]');
    expect(Date.now() - started).toBeLessThan(4000);
    expect(await pidsWith(m)).toEqual([]);
  });

  it('the end of the command ends its background jobs too', async () => {
    const m = marker();
    const started = Date.now();
    expect(await run(`(exec -a ${m} sleep 1000) & sleep 0.2; echo done`)).toBe('done\n[exit code 0]');
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await pidsWith(m)).toEqual([]);
  });

  it('an abort (a /stop) kills the tree and rejects with the reason once it is gone', async () => {
    const m = marker();
    const ac = new AbortController();
    const result = run(`(exec -a ${m} sleep 1000) & sleep 1000`, BWRAP, { signal: ac.signal });
    await until(async () => (await pidsWith(m)).length === 1);
    ac.abort(new Error('stopped by the user'));
    await expect(result).rejects.toThrow('stopped by the user');
    expect(await pidsWith(m)).toEqual([]);
  });

  it('reports exit codes and signals', async () => {
    expect(await run('echo out; echo err >&2; exit 3')).toBe('out\nerr\n[exit code 3]');
    expect(await run('true')).toBe('(no output)\n[exit code 0]');
    // bwrap passes on a command killed by a signal as 128 + its number.
    expect(await run('kill -TERM $$')).toBe('(no output)\n[exit code 143 (SIGTERM)]');
  });

  it('interleaves stdout and stderr in arrival order', async () => {
    expect(await run('echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three')).toBe('one\ntwo\nthree\n[exit code 0]');
  });

  it('caps the output at 30 KB, keeping the head and the tail', async () => {
    const out = await run('seq 1 100000');
    const [body, ending] = [out.slice(0, out.lastIndexOf('\n')), out.slice(out.lastIndexOf('\n') + 1)];
    expect(ending).toBe('[exit code 0]');
    expect(body.startsWith('1\n2\n3\n')).toBe(true);
    expect(body.endsWith('99999\n100000')).toBe(true);
    const total = Buffer.byteLength(Array.from({ length: 100_000 }, (_, i) => `${i + 1}\n`).join(''));
    expect(body).toContain(`[… ${(total - OUTPUT_CAP_BYTES).toLocaleString('en-US')} bytes of 575.1 KB cut from the middle …]`);
    expect(Buffer.byteLength(body)).toBeLessThan(OUTPUT_CAP_BYTES + 100);
  });

  it('reports binary output by its size instead of showing it', async () => {
    expect(await run('head -c 5000 /dev/urandom')).toBe('[binary output, 4.9 KB, not shown]\n[exit code 0]');
    expect(await run("printf 'a\\0b'")).toBe('[binary output, 3 B, not shown]\n[exit code 0]');
    expect(await run("printf 'caf\\xe9 cr\\xe8me, na\\xefve but mostly text'")).toMatch(/^caf\uFFFD cr\uFFFDme/);
  });

  it('bounds a fork bomb: the process cap holds and the timeout ends it', async () => {
    const result = await forkBomb();
    expect(result.output).toMatch(/fork: (retry: )?Resource temporarily unavailable/);
    expect(result.output).toMatch(/\[timed out after 2 s: the command and everything it started were killed\]$/);
    // 256 processes per sandbox: bwrap's init, and at most 255 of the bomb.
    expect(result.peak).toBeGreaterThan(20);
    expect(result.peak).toBeLessThanOrEqual(256);
    expect(await pidsWith(result.marker)).toEqual([]);
  });
});

/**
 * Runs a fork bomb through the tool in a child process. The kernel never applies RLIMIT_NPROC
 * to root, so when the tests run as root the child runs as nobody, as a deployed worker would
 * (the Docker image's `node` user); the peak is sampled from the host meanwhile.
 */
async function forkBomb(): Promise<{ output: string; peak: number; marker: string }> {
  const base = await mkdtemp(path.join(os.tmpdir(), 'switchboard-forkbomb-'));
  try {
    const asRoot = process.getuid?.() === 0;
    const ids = asRoot ? { uid: 65534, gid: 65534 } : {};
    await chmod(base, 0o755);
    for (const dir of ['ws', 'tmp']) {
      await mkdir(path.join(base, dir));
      if (asRoot) await chown(path.join(base, dir), 65534, 65534);
    }
    const m = marker();
    const script = [
      `import { createRunCommandTool } from ${JSON.stringify(path.join(REPO, 'src/tools/run-command.ts'))};`,
      `import { Workspace } from ${JSON.stringify(path.join(REPO, 'src/tools/workspace.ts'))};`,
      `const tool = createRunCommandTool(new Workspace(process.env.WS), { sandbox: 'bwrap', network: false, maxTimeoutS: 60 });`,
      `process.stdout.write(await tool.execute({ command: process.env.CMD, timeout_s: 2 }, { signal: new AbortController().signal }));`,
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: REPO,
      ...ids,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: path.join(base, 'tmp'),
        TMPDIR: path.join(base, 'tmp'),
        WS: path.join(base, 'ws'),
        CMD: `exec -a ${m} bash -c ':(){ :|:& };:; sleep 30'`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let errors = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (errors += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    let peak = 0;
    let done = false;
    void exited.then(() => (done = true));
    while (!done) {
      peak = Math.max(peak, (await pidsWith(m)).length);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await exited, errors).toBe(0);
    return { output, peak, marker: m };
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

describe('run_command with sandbox none', () => {
  it('runs on the host in the workspace folder with the same clean environment', async () => {
    const secret = `sb-secret-${randomUUID()}`;
    process.env.SB_TEST_SECRET = secret;
    try {
      const out = await run('pwd; echo "$HOME"; env | sort', NONE);
      expect(out).not.toContain(secret);
      const lines = out.split('\n');
      expect(lines.slice(0, 2)).toEqual([sb.root, sb.root]);
      expect(lines.slice(2, -1).map((l) => l.split('=')[0])).toEqual(['HOME', 'LANG', 'PATH', 'PWD', 'SHLVL', 'TERM', '_']);
    } finally {
      delete process.env.SB_TEST_SECRET;
    }
  });

  it('kills the process group at a timeout and at its end, and reports signals by name', async () => {
    const m = marker();
    const result = run(`(exec -a ${m} sleep 1000) & sleep 1000`, NONE, { timeout_s: 1 });
    await until(async () => (await pidsWith(m)).length === 1);
    expect(await result).toBe('(no output)\n[timed out after 1 s: the command and everything it started were killed]');
    expect(await pidsWith(m)).toEqual([]);
    const m2 = marker();
    expect(await run(`(exec -a ${m2} sleep 1000) & echo done`, NONE)).toBe('done\n[exit code 0]');
    expect(await pidsWith(m2)).toEqual([]);
    expect(await run('kill -TERM $$', NONE)).toBe('(no output)\n[killed by signal SIGTERM]');
  });
});

describe('run_command arguments and failures', () => {
  it('caps timeout_s at maxTimeoutS and says so', async () => {
    const out = await run('sleep 5', { ...BWRAP, maxTimeoutS: 1 }, { timeout_s: 30 });
    expect(out).toBe(
      '(no output)\n[timeout_s 30 is over the limit; it ran with 1 s]\n[timed out after 1 s: the command and everything it started were killed]',
    );
    expect(await run('echo fine', { ...BWRAP, maxTimeoutS: 1 })).toBe('fine\n[exit code 0]');
  });

  it('validates its arguments through runToolCall, and is offered only when exec is given', async () => {
    expect(buildTools(sb.ws).map((t) => t.name)).not.toContain('run_command');
    const tools = buildTools(sb.ws, { exec: BWRAP });
    const tool = tools.find((t) => t.name === 'run_command')!;
    expect(tool.readOnly).toBeUndefined();
    expect(tool.description).toBe(
      'Run a shell command (bash -c) in the workspace (/workspace), sandboxed, no network. Returns stdout+stderr (30 KB max, head and tail) and the exit code. Timeout at most 600 s.',
    );
    const empty = await runToolCall(tools, { name: 'run_command', arguments: '{"command":""}' }, sb.signal);
    expect(empty.ok).toBe(false);
    expect(empty.content).toMatch(/- command: Too small/);
    const zero = await runToolCall(tools, { name: 'run_command', arguments: '{"command":"true","timeout_s":0}' }, sb.signal);
    expect(zero.content).toMatch(/- timeout_s: Too small/);
    const ok = await runToolCall(tools, { name: 'run_command', arguments: '{"command":"exit 2"}' }, sb.signal);
    expect(ok).toEqual({ ok: true, content: '(no output)\n[exit code 2]', summary: 'run_command `exit 2` → 25 B' });
  });

  it('a missing bwrap is a ToolError, and the start-up check says how to install it', async () => {
    const saved = process.env.PATH;
    process.env.PATH = path.join(sb.base, 'empty-bin');
    try {
      await expect(run('true')).rejects.toThrow(ToolError);
      await expect(run('true')).rejects.toThrow(/bubblewrap \(bwrap\) is not installed on this worker.*EXEC_SANDBOX=none/);
      expect(await checkExecRuntime(BWRAP)).toEqual({
        ok: false,
        error: expect.stringMatching(/^EXEC_SANDBOX=bwrap needs bubblewrap.*apt-get install bubblewrap, apk add bubblewrap.*EXEC_SANDBOX=none/),
      });
    } finally {
      process.env.PATH = saved;
    }
  });

  it.each([
    [
      'bwrap: setting up uid map: Permission denied',
      /\(bwrap: setting up uid map: Permission denied\): allow unprivileged user namespaces .*EXEC_SANDBOX=none$/,
    ],
    ['bwrap: Unknown option --size', /\(bwrap: Unknown option --size\): this bubblewrap is too old: commands need 0\.8 or later/],
    ['bwrap: execvp prlimit: No such file or directory', /\(bwrap: execvp prlimit: No such file or directory\): commands need bash and prlimit/],
  ])('the start-up check explains a bwrap that fails: %s', async (message, expected) => {
    const bin = path.join(sb.base, 'fake-bin');
    await mkdir(bin);
    await writeFile(path.join(bin, 'bwrap'), `#!/bin/sh\necho '${message}' >&2\nexit 1\n`, { mode: 0o755 });
    const saved = process.env.PATH;
    process.env.PATH = bin;
    try {
      const check = await checkExecRuntime(BWRAP);
      expect(check.ok).toBe(false);
      if (!check.ok) expect(check.error).toMatch(expected);
    } finally {
      process.env.PATH = saved;
    }
  });

  it('the start-up check passes here, with a warning for root and for no sandbox', async () => {
    const check = await checkExecRuntime(BWRAP);
    if (process.getuid?.() === 0) expect(check).toEqual({ ok: true, warning: expect.stringMatching(/runs as root.*no process cap/) });
    else expect(check).toEqual({ ok: true });
    expect(await checkExecRuntime(NONE)).toEqual({ ok: true, warning: expect.stringMatching(/commands run on the host without a sandbox/) });
  });
});

describe('OutputCap', () => {
  const collect = (chunks: Array<string | Buffer>, max = 20) => {
    const cap = new OutputCap(max);
    for (const c of chunks) cap.push(Buffer.from(c));
    return cap.text();
  };

  it('keeps output up to the cap whole, however it arrives', () => {
    expect(collect(['0123456789', '0123456789'])).toBe('01234567890123456789');
    expect(collect([...'abcdefghijklmnopqrst'])).toBe('abcdefghijklmnopqrst');
  });

  it('keeps the head and the latest tail of more, from chunks of any size', () => {
    expect(collect([...'abcdefghijklmnopqrstuvwxyz'])).toBe('abcdefghij\n[… 6 bytes of 26 B cut from the middle …]\nqrstuvwxyz');
    expect(collect(['abcdefghijklmnopqrstuvwxyz'])).toBe('abcdefghij\n[… 6 bytes of 26 B cut from the middle …]\nqrstuvwxyz');
  });

  it('cuts between characters, never inside one', () => {
    // "é" is two bytes: the head's 10 bytes end, and the tail's start, in the middle of one.
    const out = collect(['aaaaaaaaaé', 'x'.repeat(20), 'éaaaaaaaaa']);
    expect(out).toBe('aaaaaaaaa\n[… 24 bytes of 42 B cut from the middle …]\naaaaaaaaa');
    expect(out).not.toContain('\uFFFD');
  });
});
