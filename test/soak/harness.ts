import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChatMessage } from '../../src/agent/types.js';
import { PLACEHOLDER } from '../../src/channels/kit/pieces.js';
import { startFakeOpenAI } from '../fakes/openai-server.js';
import { startFakeTelegram, TOKEN, type FakeTelegram } from '../fakes/telegram-server.js';
import { REPO } from '../helpers/processes.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';
import { productEnv } from '../helpers/product-env.js';

export interface SoakOptions {
  turns: number;
  sessions: number;
  workers: number;
  /** WORKER_CONCURRENCY of each worker: a run holds its slot while it waits for its chat's turn (about a second in a DM). */
  concurrency: number;
  /** Sessions with a message in flight at once (the load). */
  inFlight: number;
  /** An RSS sample of every process each this many turns. */
  sampleEvery: number;
  /** The turn count whose sample is the baseline the bound is measured against. */
  baselineAt: number;
  log: (line: string) => void;
  /** Aborted (Ctrl-C): the run stops early, and still stops what it started. */
  signal?: AbortSignal;
}

export interface RssSample {
  turns: number;
  atMs: number;
  /**
   * MiB per process, by role name (gateway, worker-1, …): the least of SETTLE_READS readings over
   * a few seconds (the load paused), what the process holds once the garbage of the turns in flight is collected.
   * A leak raises it; a young-generation burst (tens of MiB for a moment, gone by the next
   * reading) does not.
   */
  rssMiB: Record<string, number>;
  /** The first of those readings, as a single sample would have it. */
  rawMiB: Record<string, number>;
}

export interface SoakResult {
  samples: RssSample[];
  /** Per process: the baseline sample, the largest after it, and the growth in percent (of the settled RSS: the bound). */
  growth: Record<string, { baselineMiB: number; peakAfterMiB: number; percent: number }>;
  /** The same of the single first readings: what one sample per point shows, bursts included. */
  rawGrowth: Record<string, { baselineMiB: number; peakAfterMiB: number; percent: number }>;
  turns: number;
  answered: number;
  /** Turns answered more than once, or not at all, when the run ended. */
  duplicates: number;
  unanswered: number;
  wallMs: number;
  /** Pino lines at warn or above, by process. */
  warnings: Record<string, number>;
}

interface Proc {
  name: string;
  child: ChildProcess;
  warnings: number;
  ready: Promise<void>;
}

const CHAT_BASE = 900_000;
/** Readings per sample (see RssSample.rssMiB), this far apart. */
const SETTLE_READS = 5;
const SETTLE_READ_GAP_MS = 1_000;

/**
 * A long-running deployment in small: a gateway long-polling the fake Bot API, `workers` worker
 * processes, a model that answers at once, and DMs over `sessions` chats, each chat with at most one
 * message in flight. Every `sampleEvery` turns the RSS of each process is read from /proc. Stops
 * everything it started by pid and removes its keys.
 */
export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const started = Date.now();
  const prefix = uniquePrefix('soak');
  const redis = testRedis();
  // The fakes live in this process: they keep what the chats show, not a log of every call.
  const tg = await startFakeTelegram({ keepCalls: false });
  const model = await startFakeOpenAI();
  model.setHandler((req) => {
    const users = (req.body.messages as ChatMessage[]).filter((m) => m.role === 'user');
    return { content: `ok ${String(users.at(-1)?.content ?? '')}` };
  });
  const root = await mkdtemp(join(tmpdir(), 'sb-soak-'));
  const env = productEnv(
    { prefix, modelUrl: model.baseURL, root },
    {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: tg.apiRoot,
      STREAM_ANSWERS: '0',
      WORKER_CONCURRENCY: String(o.concurrency),
      // A diagnosis aid: e.g. SOAK_NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2 to take heap snapshots of a growing process.
      ...(process.env.SOAK_NODE_OPTIONS && { NODE_OPTIONS: process.env.SOAK_NODE_OPTIONS }),
    },
  );
  const procs: Proc[] = [];
  try {
    procs.push(spawnRole('gateway', 'gateway', env));
    for (let i = 1; i <= o.workers; i++) procs.push(spawnRole(`worker-${i}`, 'worker', env));
    await Promise.all(procs.map((p) => p.ready));
    o.log(`up: ${procs.map((p) => `${p.name} pid ${p.child.pid}`).join(', ')}; prefix ${prefix}`);

    const drive = new Driver(tg, o);
    const samples: RssSample[] = [];
    const sample = async (turns: number) => {
      const rssMiB: Record<string, number> = {};
      const rawMiB: Record<string, number> = {};
      for (let k = 0; k < SETTLE_READS; k++) {
        if (k > 0) await new Promise((r) => setTimeout(r, SETTLE_READ_GAP_MS));
        for (const p of procs) {
          const now = await rssOf(p.child.pid!);
          if (k === 0) rawMiB[p.name] = now;
          rssMiB[p.name] = Math.min(rssMiB[p.name] ?? Infinity, now);
        }
      }
      samples.push({ turns, atMs: Date.now() - started, rssMiB, rawMiB });
      o.log(
        `${turns} turns: ${Object.entries(rssMiB)
          .map(([n, v]) => `${n} ${v.toFixed(0)} MiB`)
          .join(', ')}`,
      );
    };
    await sample(0);
    let next = o.sampleEvery;
    await drive.run(async (done) => {
      if (done >= next) {
        next += o.sampleEvery;
        await sample(done);
      }
      for (const p of procs) if (p.child.exitCode !== null) throw new Error(`${p.name} exited with ${p.child.exitCode}`);
      o.signal?.throwIfAborted();
    });
    if (samples.at(-1)!.turns !== drive.done) await sample(drive.done);
    const { duplicates, unanswered } = drive.audit();
    return {
      samples,
      growth: growthOf(samples, o.baselineAt),
      rawGrowth: growthOf(samples, o.baselineAt, 'rawMiB'),
      turns: o.turns,
      answered: drive.done,
      duplicates,
      unanswered,
      wallMs: Date.now() - started,
      warnings: Object.fromEntries(procs.map((p) => [p.name, p.warnings])),
    };
  } finally {
    for (const p of procs) await stop(p.child);
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await model.close();
    await tg.close();
    await rm(root, { recursive: true, force: true });
  }
}

/** Sends each chat its next DM once its last one is answered, `inFlight` chats at a time, until `turns` are answered. */
class Driver {
  done = 0;
  private sentTurns = 0;
  /** Per chat, how many of its DMs were sent. */
  private readonly seq: number[];
  private readonly waiting = new Map<number, string>();
  private idle: number[];

  constructor(
    private readonly tg: FakeTelegram,
    private readonly o: SoakOptions,
  ) {
    this.seq = Array.from({ length: o.sessions }, () => 0);
    this.idle = Array.from({ length: o.sessions }, (_, i) => i);
  }

  async run(onProgress: (done: number) => Promise<void>): Promise<void> {
    let lastProgressAt = Date.now();
    while (this.done < this.o.turns) {
      while (this.waiting.size < this.o.inFlight && this.sentTurns < this.o.turns && this.idle.length > 0) this.send();
      const before = this.done;
      for (const [chat, token] of this.waiting) {
        const last = this.tg.sentTo(CHAT_BASE + chat).at(-1);
        if (last && last.raw !== PLACEHOLDER && !last.silent && last.text.includes(token)) {
          this.waiting.delete(chat);
          this.idle.push(chat);
          this.done++;
        }
      }
      if (this.done > before) lastProgressAt = Date.now();
      else if (Date.now() - lastProgressAt > 60_000) throw new Error(`no answer for 60 s at ${this.done} turns (${this.waiting.size} waiting)`);
      await onProgress(this.done);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private send(): void {
    // A random idle chat: the sessions are visited in no fixed order, as people write.
    const k = Math.floor(Math.random() * this.idle.length);
    const chat = this.idle[k]!;
    this.idle[k] = this.idle.at(-1)!;
    this.idle.pop();
    const token = `c${chat}-t${++this.seq[chat]!}`;
    const chatId = CHAT_BASE + chat;
    this.tg.pushUpdate({
      message: this.tg.message({ chat: { id: chatId, type: 'private' }, from: { id: chatId, is_bot: false, first_name: `User ${chat}` }, text: token }),
    });
    this.waiting.set(chat, token);
    this.sentTurns++;
  }

  /** Each DM sent has exactly one answer naming it. */
  audit(): { duplicates: number; unanswered: number } {
    let duplicates = 0;
    let unanswered = 0;
    for (let chat = 0; chat < this.o.sessions; chat++) {
      const counts = new Map<string, number>();
      for (const m of this.tg.sentTo(CHAT_BASE + chat)) {
        const token = /^ok (c\d+-t\d+)$/.exec(m.text)?.[1];
        if (token && !m.deleted) counts.set(token, (counts.get(token) ?? 0) + 1);
      }
      for (let t = 1; t <= this.seq[chat]!; t++) {
        const n = counts.get(`c${chat}-t${t}`) ?? 0;
        if (n === 0) unanswered++;
        if (n > 1) duplicates++;
      }
    }
    return { duplicates, unanswered };
  }
}

/**
 * Starts a role as `npm start` runs it, from the build (npm run soak builds first: a process
 * running the sources through tsx carries the compiler too); its log is read for the ready line and
 * counted for warnings, never kept.
 */
function spawnRole(name: string, role: 'gateway' | 'worker', env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['dist/cli/main.js', role], { cwd: REPO, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const proc: Proc = { name, child, warnings: 0, ready: Promise.resolve() };
  const readyLine = role === 'worker' ? '"worker ready"' : '"gateway listening"';
  proc.ready = new Promise((resolve, reject) => {
    let partial = '';
    child.stderr!.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line.includes(readyLine)) resolve();
        const level = /"level":(\d+)/.exec(line)?.[1];
        if (level && Number(level) >= 40) proc.warnings++;
      }
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code} before it was ready`)));
  });
  return proc;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(child.pid!, 'SIGTERM');
  const timer = setTimeout(() => child.exitCode === null && process.kill(child.pid!, 'SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Resident set size in MiB, from /proc (Linux). */
async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

/** Per process: its RSS at the baseline sample (the first at or past `baselineAt` turns), the peak after it, and the growth. */
export function growthOf(samples: readonly RssSample[], baselineAt: number, of: 'rssMiB' | 'rawMiB' = 'rssMiB'): SoakResult['growth'] {
  const base = samples.find((s) => s.turns >= baselineAt);
  if (!base) return {};
  const after = samples.filter((s) => s.turns > base.turns);
  return Object.fromEntries(
    Object.entries(base[of]).map(([name, baselineMiB]) => {
      const peakAfterMiB = Math.max(baselineMiB, ...after.map((s) => s[of][name] ?? 0));
      return [name, { baselineMiB, peakAfterMiB, percent: ((peakAfterMiB - baselineMiB) / baselineMiB) * 100 }];
    }),
  );
}
