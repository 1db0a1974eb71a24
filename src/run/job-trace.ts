import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import type { SessionKeys } from '../queue/keys.js';
import { byCode, defineScript, runScript } from '../queue/redis-scripts.js';

/** How long a log row or a phase waits before it is written: what happens faster reaches Redis in one write, with the rows after it. */
export const TRACE_FLUSH_MS = 250;
const ROWS_PER_WRITE = 500;

// Appends the rows to the job's log (BullMQ's list, which the dashboard reads) and, when `data`
// is not empty, replaces the job's data (its display fields), in one step. → 1, or 0: the job is
// gone (removed from the dashboard), nothing written.
const APPEND_JOB_TRACE = defineScript({
  name: 'sbJobTrace',
  keys: ['job', 'logs'],
  args: ['data'],
  lists: ['rows'],
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'data', ARGV[1]) end
if #ARGV > 1 then redis.call('RPUSH', KEYS[2], unpack(ARGV, 2)) end
return 1
`,
  decode: byCode({ 1: 'written', 0: 'job_gone' }),
});

export interface JobProgress {
  step: number | undefined;
  phase: string;
}

/**
 * What the dashboard shows of a run while it runs: the job's log rows, its display data and its
 * progress. None of it is the run's record (the journal is), so it is written behind the run,
 * one write at a time: rows and data wait up to TRACE_FLUSH_MS and go together in one script
 * call, and a phase is written as progress only when it is still the current one after that
 * long (a model call or a tool a person could watch; not the ones done in milliseconds). A turn
 * that ends faster than that costs one write in all. A crash loses at most the last rows, which
 * the run's log lines and journal also hold. Every log row and progress of a run goes through here.
 */
export class JobTrace {
  private rows: string[] = [];
  private data: Job['data'];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private phase: { progress: JobProgress; since: number } | undefined;
  private shownPhase: JobProgress | undefined;
  private closed = false;

  constructor(
    private readonly redis: Redis,
    private readonly keys: SessionKeys,
    private readonly job: Job,
    private readonly log: Logger,
    private readonly flushMs = TRACE_FLUSH_MS,
  ) {}

  /** One row of the job's log. */
  line(text: string): void {
    if (this.closed) return;
    this.rows.push(text);
    this.schedule();
  }

  /** The job's data from now on (written with the next rows). */
  setData(data: Job['data']): void {
    if (this.closed) return;
    this.data = data;
    this.job.data = data;
    this.schedule();
  }

  /** The phase the run is in now; shown as the job's progress if it lasts. */
  progress(progress: JobProgress): void {
    if (this.closed) return;
    this.phase = { progress, since: Date.now() };
    this.schedule();
  }

  /** Writes what waits (the progress of a phase that ended is not) and stops; later rows are dropped. */
  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.phase = undefined;
      this.flush();
    }
    return this.writing;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), this.flushMs);
    this.timer.unref();
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const rows = this.rows.splice(0);
    const data = this.data;
    this.data = undefined;
    const phase = this.phase;
    const showPhase = phase !== undefined && phase.progress !== this.shownPhase && Date.now() - phase.since >= this.flushMs;
    // A phase too young to show yet gets another look when it would be old enough.
    if (phase !== undefined && phase.progress !== this.shownPhase && !showPhase) this.schedule();
    if (showPhase) this.shownPhase = phase.progress;
    if (rows.length === 0 && data === undefined && !showPhase) return;
    this.writing = this.writing
      .then(async () => {
        const keys = { job: this.keys.job(this.job.id!), logs: this.keys.jobLogs(this.job.id!) };
        // A script's arguments are unpacked onto Lua's stack: a long backlog goes in slices (the data with the first).
        let dataArg = data === undefined ? '' : JSON.stringify(data);
        for (let i = 0; i < rows.length || dataArg !== ''; i += ROWS_PER_WRITE) {
          await runScript(this.redis, APPEND_JOB_TRACE, { keys, args: { data: dataArg, rows: rows.slice(i, i + ROWS_PER_WRITE) } });
          dataArg = '';
        }
        if (showPhase) await this.job.updateProgress({ ...phase.progress });
      })
      .catch((err: unknown) => this.log.warn({ err }, 'job log write failed'));
  }
}
