import type { AgentEvent } from '../agent/types.js';
import type { InboundMessage, OutboundAdapter } from '../channels/types.js';
import type { Logger } from '../log.js';
import { progressLine } from './progress-lines.js';

/** Lines kept in the status message: the newest ones. */
const STATUS_LINES = 8;

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
  statusMessageId: string | undefined;

  constructor(
    private readonly out: OutboundAdapter,
    private readonly to: InboundMessage,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

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

  private schedule(): void {
    if (this.timer) return;
    const wait = this.statusMessageId === undefined ? 0 : Math.max(0, this.lastEditAt + this.out.editIntervalMs - this.now());
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
        this.statusMessageId = id;
      } else {
        await this.out.edit(this.to, this.statusMessageId, text);
      }
      this.shown = text;
    } catch (err) {
      this.log.warn({ err }, 'progress update failed');
    } finally {
      this.lastEditAt = this.now();
    }
  }
}
