// What one two-hop turn costs Redis: commands (by name) and bytes on the wire, measured on a
// private redis-server the bench starts on a free port (so that nothing else's traffic is in the
// counters), stopped by its pid after.
//
// Method: `node <main> all` (gateway + worker, Telegram against the fake) on that server; one
// warm-up turn (connections, script loading, first-time keys); then INFO before and after N
// turns (one after the other, each a new DM chat), plus a settle time for the turn's tail (job
// completion after the reply). The idle traffic of the same processes (BullMQ's blocking waits,
// stalled checks, the reconciler) is measured right after over an interval of the same length
// with no turns, and subtracted. Each interval holds exactly one INFO call of the bench's own,
// so those cancel too.
//
// A "two-hop turn" here: model call → one tool (read_file) → model call → reply.
// INFO commandstats counts the commands a Lua script runs under their own names as well as the
// EVALSHA that ran them, so the total is commands executed, not client round trips.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { waitFor, type Spawned } from '../test/helpers/processes.js';
import { freePort } from '../test/helpers/ports.js';
import { spawnTracked, stop, stopChild } from './children.js';
import { dmAndWait, ONE_TOOL_QUESTION, seedTwoHop, startRole, startTelegramRig, type TelegramRig } from './rig.js';

interface Snapshot {
  at: number;
  calls: Map<string, number>;
  inBytes: number;
  outBytes: number;
}

export interface RedisPerTurn {
  turns: number;
  /** Length of each interval (turns, then idle), ms. */
  intervalMs: number;
  commandsPerTurn: number;
  /** EVAL/EVALSHA/FCALL calls per turn (the commands they ran are in commandsPerTurn too). */
  scriptCallsPerTurn: number;
  bytesInPerTurn: number;
  bytesOutPerTurn: number;
  bytesPerTurn: number;
  /** Top 10 commands by calls per turn. */
  top: { command: string; perTurn: number }[];
  /** Idle traffic of the same processes, subtracted above. */
  idleCommandsPerSecond: number;
}

const SETTLE_MS = 500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function parseInfo(text: string): Omit<Snapshot, 'at'> {
  const calls = new Map<string, number>();
  let inBytes = Number.NaN;
  let outBytes = Number.NaN;
  for (const line of text.split(/\r?\n/)) {
    const cmd = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (cmd) calls.set(cmd[1]!, Number(cmd[2]));
    const inb = /^total_net_input_bytes:(\d+)/.exec(line);
    if (inb) inBytes = Number(inb[1]);
    const outb = /^total_net_output_bytes:(\d+)/.exec(line);
    if (outb) outBytes = Number(outb[1]);
  }
  if (Number.isNaN(inBytes) || Number.isNaN(outBytes)) throw new Error('INFO has no total_net_input_bytes / total_net_output_bytes');
  return { calls, inBytes, outBytes };
}

async function snapshot(redis: Redis): Promise<Snapshot> {
  const text = String(await redis.call('INFO', 'stats', 'commandstats'));
  return { at: performance.now(), ...parseInfo(text) };
}

function delta(a: Snapshot, b: Snapshot) {
  const calls = new Map<string, number>();
  for (const [name, n] of b.calls) calls.set(name, n - (a.calls.get(name) ?? 0));
  return { calls, inBytes: b.inBytes - a.inBytes, outBytes: b.outBytes - a.outBytes };
}

export async function measureRedisPerTurn(turns: number, main: string): Promise<RedisPerTurn> {
  const dir = await mkdtemp(join(tmpdir(), 'sb-bench-redis-'));
  const port = await freePort();
  let server: ChildProcess | undefined;
  let info: Redis | undefined;
  let rig: TelegramRig | undefined;
  let proc: Spawned | undefined;
  try {
    server = spawnTracked('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
      stdio: 'ignore',
    });
    const s = server;
    info = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: null, lazyConnect: true, retryStrategy: () => 50 });
    const client = info;
    client.on('error', () => undefined); // refused until the server listens: the wait below retries
    await waitFor(
      'the private redis-server',
      async () => {
        if (s.exitCode !== null) throw new Error(`redis-server exited ${s.exitCode}`);
        try {
          if (client.status === 'wait') await client.connect();
          return (await client.ping()) === 'PONG';
        } catch {
          return false;
        }
      },
      10_000,
      50,
    );
    rig = await startTelegramRig(`redis://127.0.0.1:${port}`, `{bench-redis-${process.pid}}`);
    proc = (await startRole('all', rig.env, main)).proc;
    await seedTwoHop(rig, 1);
    await dmAndWait(rig, 1, ONE_TOOL_QUESTION);
    await sleep(SETTLE_MS);

    const a = await snapshot(client);
    for (let chat = 2; chat < 2 + turns; chat++) {
      await seedTwoHop(rig, chat);
      await dmAndWait(rig, chat, ONE_TOOL_QUESTION);
    }
    await sleep(SETTLE_MS);
    const b = await snapshot(client);
    const c = await snapshot(client);
    await sleep(b.at - a.at);
    const d = await snapshot(client);

    const work = delta(a, b);
    const idle = delta(c, d);
    const perTurn = new Map<string, number>();
    for (const [name, n] of work.calls) {
      const v = (n - (idle.calls.get(name) ?? 0)) / turns;
      if (v > 0) perTurn.set(name, v);
    }
    const r1 = (v: number) => Math.round(v * 10) / 10;
    const commands = [...perTurn.values()].reduce((x, y) => x + y, 0);
    const scripts = ['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'].reduce((n, k) => n + (perTurn.get(k) ?? 0), 0);
    const bytesIn = (work.inBytes - idle.inBytes) / turns;
    const bytesOut = (work.outBytes - idle.outBytes) / turns;
    const idleCommands = [...idle.calls.values()].reduce((x, y) => x + y, 0);
    return {
      turns,
      intervalMs: Math.round(b.at - a.at),
      commandsPerTurn: r1(commands),
      scriptCallsPerTurn: r1(scripts),
      bytesInPerTurn: Math.round(bytesIn),
      bytesOutPerTurn: Math.round(bytesOut),
      bytesPerTurn: Math.round(bytesIn + bytesOut),
      top: [...perTurn]
        .sort((x, y) => y[1] - x[1])
        .slice(0, 10)
        .map(([command, n]) => ({ command, perTurn: r1(n) })),
      idleCommandsPerSecond: r1(idleCommands / ((d.at - c.at) / 1000)),
    };
  } finally {
    try {
      await stop(proc);
      await rig?.close();
    } finally {
      info?.disconnect();
      if (server) await stopChild(server);
      await rm(dir, { recursive: true, force: true });
    }
  }
}
