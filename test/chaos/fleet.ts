import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnWorker, type Spawned } from '../helpers/processes.js';

const LOG_DIR = process.env.CHAOS_LOG_DIR;

/**
 * The worker processes of a chaos run: keeps `size` of them alive (a killed one is replaced at
 * once), freezes one on request, and follows from their logs which worker runs which session.
 * Every process it starts is signalled by its own pid, and close() ends them all.
 */
export class Fleet {
  private readonly alive = new Map<number, Spawned>();
  private readonly frozen = new Set<number>();
  /** Session key → pid of the worker whose "run started" line for it came last. */
  private readonly holders = new Map<string, number>();
  private readonly starting = new Set<Promise<void>>();
  private closed = false;
  /** "run started" lines seen, over every worker (re-runs included). */
  runsStarted = 0;
  /** Replacements that did not come up (a worker exiting before "worker ready"). */
  readonly failures: string[] = [];

  constructor(
    private readonly env: Record<string, string>,
    private readonly size: number,
  ) {}

  /** Starts workers until `size` are alive or starting; resolves when they are ready. */
  async fill(): Promise<void> {
    const missing = this.size - this.alive.size - this.starting.size;
    const started = Array.from({ length: Math.max(0, missing) }, () => {
      const p = this.startOne().finally(() => this.starting.delete(p));
      this.starting.add(p);
      return p;
    });
    await Promise.all(started);
  }

  /** The live, running (not frozen) worker that runs this session now, as far as the logs tell. */
  workerOf(session: string): number | undefined {
    const pid = this.holders.get(session);
    return pid !== undefined && this.alive.has(pid) && !this.frozen.has(pid) ? pid : undefined;
  }

  /** Sessions each live, running worker holds. */
  busy(): Map<number, string[]> {
    const out = new Map<number, string[]>();
    for (const [session, pid] of this.holders) {
      if (this.workerOf(session) === pid) out.set(pid, [...(out.get(pid) ?? []), session]);
    }
    return out;
  }

  anyFrozen(): boolean {
    return this.frozen.size > 0;
  }

  /** SIGKILLs one worker, waits for it to be gone, and starts its replacement (not awaited). False if it was not alive. */
  async kill(pid: number): Promise<boolean> {
    const worker = this.alive.get(pid);
    if (!worker) return false;
    this.alive.delete(pid);
    worker.kill('SIGKILL');
    await worker.exited;
    void this.fill().catch((err: unknown) => this.failures.push(String(err)));
    return true;
  }

  /** SIGSTOPs a worker for `ms`, then SIGCONTs it: it wakes after its locks have expired. */
  async freeze(pid: number, ms: number): Promise<void> {
    const worker = this.alive.get(pid);
    if (!worker) return;
    this.frozen.add(pid);
    worker.kill('SIGSTOP');
    await new Promise((r) => setTimeout(r, ms));
    worker.kill('SIGCONT');
    this.frozen.delete(pid);
  }

  /** SIGKILLs every worker (a frozen one too) and waits for the ones still starting. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.starting]);
    const all = [...this.alive.values()];
    this.alive.clear();
    for (const w of all) w.kill('SIGKILL');
    await Promise.all(all.map((w) => w.exited));
  }

  private async startOne(): Promise<void> {
    const worker = await spawnWorker(this.env);
    if (this.closed) {
      worker.kill('SIGKILL');
      await worker.exited;
      return;
    }
    this.alive.set(worker.pid, worker);
    this.follow(worker);
  }

  /** Reads the worker's pino lines: what it logged before it was ready, then each new chunk. */
  private follow(worker: Spawned): void {
    let partial = '';
    const take = (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) this.onLine(worker.pid, line);
    };
    take(worker.stderr());
    worker.child.stderr!.on('data', (d: Buffer) => take(d.toString()));
  }

  // The processor logs "run started" with the session and job once it has claimed a turn, and
  // "run ended" when it has delivered; anything else (or a line that is not JSON) is ignored.
  private onLine(pid: number, line: string): void {
    // CHAOS_LOG_DIR keeps every worker line (the only record of a run that went wrong).
    if (LOG_DIR) appendFileSync(join(LOG_DIR, 'workers.log'), `${pid} ${line}\n`);
    if (!line.startsWith('{')) return;
    let entry: { msg?: unknown; session?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      return;
    }
    if (typeof entry.session !== 'string') return;
    if (entry.msg === 'run started') {
      this.runsStarted += 1;
      this.holders.set(entry.session, pid);
    } else if (entry.msg === 'run ended' && this.holders.get(entry.session) === pid) {
      this.holders.delete(entry.session);
    }
  }
}
