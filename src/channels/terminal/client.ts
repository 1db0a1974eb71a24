import type { Redis } from 'ioredis';
import type { ApprovalCard, ChannelApprovals, DeliveredOutcome } from '../types.js';
import { cardSubject, decisionLine } from '../kit/approval-card.js';
import type { ChannelIntake } from '../types.js';
import { formatBytes } from '../../lib/text.js';
import { terminalMessage } from './inbound.js';
import { terminalStreamKey, type TerminalEvent } from './stream.js';

export interface TerminalOutput {
  progress(line: string): void;
  answer(text: string): void;
  notice(text: string): void;
  /** A tool call waits for approval: resolves true to approve. Absent: every call is denied. */
  approve?(card: ApprovalCard): Promise<boolean>;
}

export type SendResult = { kind: 'queued'; session: string; done: Promise<DeliveredOutcome> } | { kind: 'handled'; ok: boolean };

/**
 * The chat process's side of the terminal channel: it enqueues typed lines through the same
 * producer every channel uses and prints what the workers write to the session's stream.
 */
export class TerminalClient {
  private lastId = '0-0';
  private readonly waiting = new Map<string, (outcome: DeliveredOutcome) => void>();
  private closed = false;
  private loop: Promise<void> | undefined;
  readonly streamKey: string;

  constructor(
    private readonly reader: Redis,
    private readonly intake: ChannelIntake,
    prefix: string,
    private readonly session: string,
    private readonly user: string,
    private readonly output: TerminalOutput,
    private readonly approvals?: ChannelApprovals,
  ) {
    this.streamKey = terminalStreamKey(prefix, session);
  }

  /** Starts reading after the newest event already in the stream. */
  async start(): Promise<void> {
    const [newest] = await this.reader.xrevrange(this.streamKey, '+', '-', 'COUNT', 1);
    if (newest) this.lastId = newest[0];
    this.loop = this.read();
  }

  async send(text: string): Promise<SendResult> {
    if (!text.trim()) return { kind: 'handled', ok: true };
    const message = terminalMessage(this.session, text, this.user);
    const done = new Promise<DeliveredOutcome>((resolve) => this.waiting.set(message.id, resolve));
    const result = await this.intake.accept(message);
    if (result.kind !== 'command') return { kind: 'queued', session: result.session, done };
    this.waiting.delete(message.id);
    (result.ok && result.name !== 'stop' ? this.output.answer : this.output.notice).call(this.output, result.reply);
    return { kind: 'handled', ok: result.ok };
  }

  get pending(): number {
    return this.waiting.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.reader.disconnect();
    await this.loop?.catch(() => {});
  }

  /** Asks the person at the terminal (the requester, so they may decide) and records the answer. */
  private async answerApproval(card: ApprovalCard): Promise<void> {
    const { label, code } = cardSubject(card);
    // A memory card is only shown: the run goes on, so the next line typed is a message, not an answer, and --yes keeps no memory.
    if (card.kind === 'memory')
      return this.output.notice(`${label}\n  ${code}\n  (not kept: this turn read tool results; it is not used unless you keep it, see /memory)`);
    if (!this.approvals) return;
    this.output.notice(`${label}\n  ${code.split('\n').join('\n  ')}`);
    const yes = (await this.output.approve?.(card)) ?? false;
    const result = await this.approvals.decide(card.id, yes ? 'approved' : 'denied', {
      platform: 'terminal',
      userId: this.user,
      name: this.user,
      chat: this.session,
    });
    if (result.kind !== 'decided')
      this.output.notice(
        `(approval ${result.kind === 'already' ? 'was already decided' : result.kind === 'not_allowed' ? 'is not yours to decide' : 'is unknown'})`,
      );
  }

  private async read(): Promise<void> {
    while (!this.closed) {
      let batch: [string, [string, string[]][]][] | null;
      try {
        batch = (await this.reader.xread('BLOCK', 1_000, 'STREAMS', this.streamKey, this.lastId)) as typeof batch;
      } catch (err) {
        if (this.closed) return;
        throw err;
      }
      for (const [, entries] of batch ?? []) {
        for (const [id, fields] of entries) {
          this.lastId = id;
          const json = fields[fields.indexOf('e') + 1];
          if (json) this.dispatch(JSON.parse(json) as TerminalEvent);
        }
      }
    }
  }

  private dispatch(event: TerminalEvent): void {
    if (event.type === 'approval') {
      this.answerApproval(event.card).catch((err: unknown) =>
        this.output.notice(`could not answer the approval: ${err instanceof Error ? err.message : String(err)}`),
      );
      return;
    }
    if (event.type === 'approval_decided') return this.output.progress(decisionLine(event.outcome, event.card));
    if (event.type === 'progress') this.output.progress(event.line);
    else if (event.type === 'file') this.output.answer(fileLine(event));
    else if (event.type === 'post')
      (event.kind === 'answer' ? this.output.answer : event.kind === 'status' ? this.output.progress : this.output.notice).call(this.output, event.text);
    else {
      for (const id of event.outcome.messageIds) {
        this.waiting.get(id)?.(event.outcome);
        this.waiting.delete(id);
      }
    }
  }
}

/** "[file] /srv/ws/…/report.pdf (12 KB): the March numbers". */
function fileLine(event: Extract<TerminalEvent, { type: 'file' }>): string {
  return `[file] ${event.absolutePath} (${formatBytes(event.size)})${event.caption ? `: ${event.caption}` : ''}`;
}
