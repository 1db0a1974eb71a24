import type { AgentEvent, RunOutcome } from '../../agent/types.js';
import type { InboundMessage, OutboundAdapter, StreamShown } from '../../channels/types.js';
import type { StreamEntry } from '../../session/journal.js';
import type { Logger } from '../../log.js';

/**
 * A step's text is streamed once it is this long: most words that come with tool calls ("Let me
 * look at the notes.") are shorter and go to the status line as before, so a message is not
 * posted for them.
 */
export const STREAM_MIN_CHARS = 80;
/** Consecutive failed writes after which the stream gives up (the final delivery still posts the answer). */
const MAX_FAILURES = 3;

/** What the reply's delivery finishes: the messages that show the streamed answer, and its text so far. */
export interface StreamedAnswer {
  shown: StreamShown;
  text: string;
}

const NOTHING: StreamShown = { ids: [], texts: [] };

/** The platform shows a live answer and finishes it in place. */
export function canStream(out: OutboundAdapter): boolean {
  return out.streamAnswer !== undefined && out.finishStream !== undefined;
}

/**
 * Shows the answer while the model writes it (STREAM_ANSWERS): each step's text goes into
 * messages of its own, written no more often than the platform's pacing allows, the newest text
 * winning. Which messages a step streams into is journaled when it changes, so a run that takes
 * the turn over continues the same messages, and the committed reply edits them into the final
 * answer instead of posting it again. A step that ends in tool calls keeps its text as an interim
 * message, and its narration is not shown a second time on the status line.
 */
export class AnswerStream {
  private step: number;
  private shown: StreamShown;
  private latest = '';
  private written = '';
  private interim: boolean;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private lastWriteAt = -Infinity;
  private failures = 0;
  private stopped = false;
  /** Steps whose messages were settled as interim (once each: a write in flight and the step's end may both try). */
  private readonly settled = new Set<number>();

  constructor(
    /** Has `streamAnswer` and `finishStream` (see canStream). */
    private readonly out: OutboundAdapter,
    private readonly to: InboundMessage,
    private readonly log: Logger,
    private readonly record: (entry: StreamEntry) => Promise<void>,
    resumed: StreamEntry | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.step = resumed?.step ?? 0;
    this.shown = resumed?.shown ?? NOTHING;
    this.interim = resumed?.interim === true;
    this.written = this.shown.texts.join('');
  }

  /** Takes an agent event; true when the event's text is shown by the stream (progress must not show it again). */
  onEvent(event: AgentEvent): boolean {
    if (this.stopped) return false;
    if (event.type === 'answer_text') {
      if (event.step !== this.step) this.begin(event.step);
      if (this.interim) return false;
      this.latest = event.text;
      if (this.shown.ids.length > 0 || event.text.trim().length >= STREAM_MIN_CHARS) this.schedule();
      return false;
    }
    if (event.type === 'narration' && event.step === this.step && this.shown.ids.length > 0) {
      if (!this.interim) this.settleInterim(event.text);
      return true;
    }
    return false;
  }

  /** Stops writing and waits for the write in flight. Always call it (finally). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.chain;
  }

  /** The streamed messages the reply finishes: the final step's (completed), or what was streamed when the run stopped. */
  answer(outcome: RunOutcome): StreamedAnswer | undefined {
    if (this.shown.ids.length === 0 || this.interim) return undefined;
    if (outcome.state === 'completed' && this.step !== outcome.steps) return undefined;
    return { shown: this.shown, text: this.latest || this.written };
  }

  /** A new step streams into new messages; one the previous step left streaming stays as it was (its text is the model's, of a step that went on). */
  private begin(step: number): void {
    if (this.shown.ids.length > 0 && !this.interim) this.settleInterim(this.latest);
    this.step = step;
    this.shown = NOTHING;
    this.latest = '';
    this.written = '';
    this.interim = false;
    this.failures = 0;
    this.lastWriteAt = -Infinity;
  }

  /** The step's text is final where it is (formatted, no "still writing" mark) and is journaled as interim. */
  private settleInterim(text: string): void {
    const { step, shown } = this;
    this.interim = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.chain = this.chain.then(() => this.settle(step, shown, text));
  }

  private async settle(step: number, shown: StreamShown, text: string): Promise<void> {
    if (this.settled.has(step)) return;
    this.settled.add(step);
    try {
      await this.record({ step, shown, interim: true });
      await this.out.finishStream!(this.to, shown, text.trim() || shown.texts.join(''));
    } catch (err) {
      this.log.warn({ err, step }, 'could not settle a streamed message');
    }
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    const interval = this.out.streamIntervalMs?.(this.to) ?? this.out.editIntervalMs;
    // The first write goes out at once; any later one (a first write held by a 429 included) keeps the interval.
    const wait = Math.max(0, this.lastWriteAt + interval - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.chain = this.chain.then(() => this.write());
    }, wait);
  }

  private async write(): Promise<void> {
    if (this.stopped || this.interim) return;
    const text = this.latest;
    if (text === this.written) return;
    const before = this.shown;
    const step = this.step;
    try {
      const shown = await this.out.streamAnswer!(this.to, text, before);
      // The step ended while its write was out (a slow platform, a 429): the messages are that
      // step's, settled as interim — never taken over by the step that began meanwhile.
      if (this.step !== step) return void (await this.settle(step, shown, text));
      const moved = shown.ids.length !== before.ids.length || shown.ids.some((id, i) => id !== before.ids[i]);
      // A message posted is journaled before anything else is written, as the status message is.
      if (moved) await this.record({ step: this.step, shown });
      this.shown = shown;
      const changed = moved || shown.texts.some((t, i) => t !== before.texts[i]);
      if (changed) this.written = text;
      this.failures = 0;
    } catch (err) {
      this.failures += 1;
      this.log.warn({ err, failures: this.failures }, 'streaming the answer failed');
      if (this.failures >= MAX_FAILURES) {
        this.stopped = true;
        return;
      }
    } finally {
      this.lastWriteAt = this.now();
    }
    if (this.latest !== this.written) this.schedule();
  }
}
