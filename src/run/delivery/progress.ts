import type { AgentEvent } from '../../agent/types.js';
import type { InboundMessage, OutboundAdapter } from '../../channels/types.js';
import type { Logger } from '../../log.js';
import { progressLine } from './progress-lines.js';

/** Lines kept in the status message: the newest ones. */
const STATUS_LINES = 8;
/** Consecutive failed updates retried without a new line arriving. */
const RETRIES_WITHOUT_NEWS = 3;
/** A failed update waits at least this long before it is tried again. */
const MIN_RETRY_MS = 1_000;

/**
 * Shows a run's progress on one platform: the platform's native surface when the adapter has
 * one (`progress`), else one status message posted once and edited in place no more often than
 * the adapter's interval, skipping unchanged text; plus a typing indicator refreshed while the
 * run works. Progress is best effort: a failed edit is logged and the next one tries again.
 */
export class ProgressReporter {
  private lines: string[] = [];
  private shown = '';
  private lastEditAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private typingTimer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;
  private failures = 0;
  statusMessageId: string | undefined;
  private readonly recordStatus: ((id: string) => Promise<void>) | undefined;
  /** When the status message may be posted: the run's start plus `status.after`. */
  private readonly postAfter: number;

  /**
   * `status.id`: the status message an earlier run of this turn posted (a resumed run edits it);
   * `status.record`: writes a newly posted status message's id down (the journal). When it
   * refuses (the run lost its turn), the message is removed again rather than left behind.
   * `status.after`: the status message is posted no sooner than this long after the reporter is
   * made (the run's start): a run that answers sooner posts its answer alone, right away, instead
   * of a status message and then an answer that waits the chat's pacing gap behind it.
   */
  constructor(
    private readonly out: OutboundAdapter,
    private readonly to: InboundMessage,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    status: { id?: string; record?: (id: string) => Promise<void>; after?: number } = {},
  ) {
    this.statusMessageId = status.id;
    this.recordStatus = status.record;
    this.postAfter = now() + (status.after ?? 0);
  }

  start(): void {
    const { out } = this;
    if (!out.typing || !out.typingIntervalMs) return;
    const tick = () => void out.typing?.(this.to).catch((err: unknown) => this.log.warn({ err }, 'typing indicator failed'));
    tick();
    this.typingTimer = setInterval(tick, out.typingIntervalMs);
  }

  onEvent(event: AgentEvent): void {
    const line = progressLine(event);
    if (line === null || this.stopped) return;
    if (this.out.progress) {
      const { progress } = this.out;
      this.chain = this.chain.then(() => progress.call(this.out, this.to, line).catch((err: unknown) => this.log.warn({ err }, 'progress update failed')));
      return;
    }
    this.lines.push(line);
    if (this.lines.length > STATUS_LINES) this.lines = this.lines.slice(-STATUS_LINES);
    this.schedule();
  }

  /** Stops typing and timers and waits for the last progress write. Always call it (finally). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.typingTimer);
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.chain;
  }

  /** Records the new status message; one the run may not record (it lost its turn) is taken down. */
  private async keep(id: string): Promise<void> {
    try {
      await this.recordStatus!(id);
    } catch (err) {
      this.stopped = true;
      await this.out.remove?.(this.to, id).catch((e: unknown) => this.log.warn({ err: e }, 'could not remove an unrecorded status message'));
      throw err;
    }
  }

  private schedule(): void {
    if (this.timer) return;
    // The first post goes out once the run is old enough; edits, and any retry after a failure, keep the interval.
    const interval = this.failures > 0 ? Math.max(this.out.editIntervalMs, MIN_RETRY_MS) : this.out.editIntervalMs;
    const wait =
      this.statusMessageId === undefined && this.failures === 0
        ? Math.max(0, this.postAfter - this.now())
        : Math.max(0, this.lastEditAt + interval - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.chain = this.chain.then(() => this.flush());
    }, wait);
  }

  private async flush(): Promise<void> {
    if (this.stopped) return;
    const text = this.lines.join('\n');
    if (text === this.shown) return;
    // The wait was computed when the line arrived; a post or edit that was still in flight then
    // has moved lastEditAt since, so check again rather than edit right after it.
    if (this.statusMessageId !== undefined && this.now() < this.lastEditAt + this.out.editIntervalMs) return this.schedule();
    try {
      if (this.statusMessageId === undefined) {
        const [id] = await this.out.post(this.to, text, 'status');
        if (id !== undefined && this.recordStatus) await this.keep(id);
        this.statusMessageId = id;
      } else {
        await this.out.edit(this.to, this.statusMessageId, text);
      }
      this.shown = text;
      this.failures = 0;
    } catch (err) {
      this.log.warn({ err }, 'progress update failed');
      this.failures += 1;
    } finally {
      this.lastEditAt = this.now();
    }
    // A failed update is tried again after the interval even if no new line comes (the model may
    // think for a while), a few times in a row at most.
    if (this.failures > 0 && this.failures <= RETRIES_WITHOUT_NEWS && !this.stopped) this.schedule();
  }
}
