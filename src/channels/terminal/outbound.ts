import type { Redis } from 'ioredis';
import type { ApprovalCard, ApprovalOutcome, DeliveredOutcome, InboundMessage, OutboundAdapter, OutgoingFile, PostKind } from '../types.js';
import { memoryLedger, sendPieces, type PieceLedger, type WriteFailure } from '../kit/pieces.js';
import { STREAM_MAXLEN, terminalStreamKey, type TerminalEvent } from './stream.js';

export class TerminalOutbound implements OutboundAdapter {
  readonly platform = 'terminal';
  readonly editIntervalMs = 0;
  private seq = 0;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async post(to: InboundMessage, text: string, kind: PostKind, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    return sendPieces([text], ledger, { classify: () => 'retry', send: (piece) => this.write(to, { type: 'post', to: to.id, kind, text: piece }) });
  }

  /** A failed XADD is Redis being away: worth retrying, never a refusal. */
  classifyWriteError(): WriteFailure {
    return 'retry';
  }

  /** The terminal shows progress natively (stderr lines), so no status message is ever edited. */
  async edit(): Promise<void> {}

  /** Nothing is copied: the chat prints the file's path (it runs where the worker can reach the workspace). */
  readonly uploadMaxBytes = Number.MAX_SAFE_INTEGER;

  async upload(to: InboundMessage, file: OutgoingFile): Promise<string> {
    return this.write(to, {
      type: 'file',
      to: to.id,
      path: file.path,
      absolutePath: file.absolutePath,
      size: file.size,
      ...(file.caption !== undefined && { caption: file.caption }),
    });
  }

  async progress(to: InboundMessage, line: string): Promise<void> {
    await this.write(to, { type: 'progress', to: to.id, line });
  }

  /** The chat process asks at its prompt (or `--yes` answers for it) and decides through Redis. */
  async approvalCard(to: InboundMessage, card: ApprovalCard): Promise<string> {
    return this.write(to, { type: 'approval', to: to.id, card });
  }

  async approvalDecided(to: InboundMessage, _messageId: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void> {
    await this.write(to, { type: 'approval_decided', to: to.id, card, outcome });
  }

  async ended(to: InboundMessage, outcome: DeliveredOutcome): Promise<void> {
    await this.write(to, { type: 'ended', to: to.id, outcome });
  }

  private async write(to: InboundMessage, event: TerminalEvent): Promise<string> {
    const key = terminalStreamKey(this.prefix, to.conversation);
    const id = await this.redis.xadd(key, 'MAXLEN', '~', STREAM_MAXLEN, '*', 'e', JSON.stringify(event));
    this.seq += 1;
    return id ?? `terminal-${this.seq}`;
  }
}
