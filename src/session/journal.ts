import { callKey, type ApprovalBinding } from '../agent/approval-binding.js';
import type { StepJournal, StepRecord } from '../agent/types.js';
import type { PieceLedger, PieceState } from '../channels/kit/pieces.js';
import type { SessionStore } from './store.js';
import type { StreamShown } from '../channels/types.js';

/** Where an attachment went: a workspace path, or why it is not there (the journal keeps it so a resumed turn does not save it again). */
export type SavedAttachment = { path: string } | { error: string };

/** What the journal keeps of a streamed step: which messages show it and what they show. */
export interface StreamEntry {
  step: number;
  shown: StreamShown;
  /** The step ended in tool calls: its text stays as it is, a message of its own, and later steps stream anew. */
  interim?: true;
}

/**
 * The session's journal: one JSON entry per line of a Redis list, appended under the session
 * fence. Before the commit it is the turn's: which messages it took, the attachments saved, the
 * status message, each model response, each tool call before it starts and its result after.
 * The commit closes it; after that it is the reply's: each piece before it is sent and its
 * platform id once confirmed. Settling the reply clears it.
 */
export type JournalEntry =
  | { t: 'turn'; runId: string; ids: string[]; at: number }
  /** A run took the turn over from an earlier one (its worker died, froze or stopped). */
  | { t: 'resume'; runId: string; at: number }
  /** Where each attachment of the turn went, in message order. */
  | { t: 'attachments'; saved: SavedAttachment[] }
  | { t: 'status'; messageId: string }
  /** A tool call asked for approval: the approval's id and when it expires (its card follows once posted). */
  | ({ t: 'approval_open'; id: string; expiresAt: number } & ApprovalBinding)
  | { t: 'approval_card'; step: number; callId: string; messageId: string }
  /** The messages a step's streamed text is shown in (written when they change), and whether the step went on to tools. */
  | ({ t: 'stream' } & StreamEntry)
  | StepRecord
  | { t: 'piece_start'; i: number }
  | { t: 'piece'; i: number; id: string }
  /** Placeholder mode (Telegram): piece i's placeholder is posted; the piece is edited into it. */
  | { t: 'piece_placed'; i: number; id: string }
  | { t: 'piece_failed'; i: number; how: 'unknown' | 'retry'; error: string }
  | { t: 'undeliverable'; error: string };

export const parseJournal = (raw: readonly string[]): JournalEntry[] => raw.map((r) => JSON.parse(r) as JournalEntry);

const isStep = (e: JournalEntry): e is StepRecord => e.t === 'model' || e.t === 'tool_start' || e.t === 'tool_end' || e.t === 'approval';

/**
 * The turn's journal for one run: what earlier runs wrote, plus this run's writes. Step records
 * are buffered and written in one script call per flush (the loop flushes before each side
 * effect), so a step costs one round trip. Every write is fenced.
 */
export class TurnJournal implements StepJournal {
  readonly entries: JournalEntry[];
  private buffer: JournalEntry[] = [];

  constructor(
    private readonly store: SessionStore,
    loaded: readonly JournalEntry[],
  ) {
    this.entries = [...loaded];
  }

  get recorded(): StepRecord[] {
    return this.entries.filter(isStep);
  }

  /** The turn an earlier run started: its messages and when it began. */
  get turn(): Extract<JournalEntry, { t: 'turn' }> | undefined {
    return this.entries.find((e): e is Extract<JournalEntry, { t: 'turn' }> => e.t === 'turn');
  }

  get statusMessageId(): string | undefined {
    return this.entries.findLast((e): e is Extract<JournalEntry, { t: 'status' }> => e.t === 'status')?.messageId;
  }

  /** The stream an earlier run of the turn left: the messages it continues. */
  get stream(): StreamEntry | undefined {
    const e = this.entries.findLast((x): x is Extract<JournalEntry, { t: 'stream' }> => x.t === 'stream');
    if (!e) return undefined;
    const { t: _t, ...entry } = e;
    return entry;
  }

  get attachments(): SavedAttachment[] | undefined {
    return this.entries.find((e): e is Extract<JournalEntry, { t: 'attachments' }> => e.t === 'attachments')?.saved;
  }

  /** Approvals opened by this turn that have no decision recorded yet. */
  get undecidedApprovals(): Extract<JournalEntry, { t: 'approval_open' }>[] {
    const decided = new Set(this.entries.flatMap((e) => (e.t === 'approval' ? [callKey(e.step, e.callId)] : [])));
    return this.entries.filter((e): e is Extract<JournalEntry, { t: 'approval_open' }> => e.t === 'approval_open' && !decided.has(callKey(e.step, e.callId)));
  }

  approvalCardOf(call: { step: number; callId: string }): string | undefined {
    return this.entries.find(
      (e): e is Extract<JournalEntry, { t: 'approval_card' }> => e.t === 'approval_card' && e.step === call.step && e.callId === call.callId,
    )?.messageId;
  }

  record(entry: JournalEntry): void {
    this.buffer.push(entry);
  }

  /** Writes the buffer, if it holds a step: the turn's own entries alone are not worth a round trip. */
  async flush(): Promise<void> {
    if (!this.buffer.some(isStep)) return;
    await this.writeBuffer();
  }

  /** Writes what is buffered now, whatever it is (before the run stops and leaves the turn to another run). */
  async writeBuffer(): Promise<void> {
    const batch = this.buffer;
    this.buffer = [];
    await this.write(batch);
  }

  /** Writes entries at once, apart from the buffer. */
  async write(entries: readonly JournalEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.store.journal(entries.map((e) => JSON.stringify(e)));
    this.entries.push(...entries);
  }

  /** Drops what the journal held (it did not belong to the inbox head: see the processor). */
  async discard(): Promise<void> {
    await this.store.journal([], true);
    this.entries.length = 0;
    this.buffer = [];
  }

  /** The ledger of a reply's pieces, kept in this journal. */
  ledger(): PieceLedger {
    const states = new Map<number, PieceState>();
    for (const e of this.entries) {
      if (e.t === 'piece_start') states.set(e.i, 'started');
      else if (e.t === 'piece') states.set(e.i, { posted: e.id });
      else if (e.t === 'piece_placed') states.set(e.i, { placed: e.id });
      else if (e.t === 'piece_failed') {
        if (e.how === 'unknown') states.set(e.i, 'unknown');
        else states.delete(e.i);
      }
    }
    const write = async (entry: JournalEntry, state: PieceState | undefined, i: number) => {
      await this.write([entry]);
      if (state === undefined) states.delete(i);
      else states.set(i, state);
    };
    return {
      durable: true,
      state: (i) => states.get(i) ?? 'new',
      started: (i) => write({ t: 'piece_start', i }, 'started', i),
      posted: (i, id) => write({ t: 'piece', i, id }, { posted: id }, i),
      placed: (i, id) => write({ t: 'piece_placed', i, id }, { placed: id }, i),
      failed: (i, how, error) => write({ t: 'piece_failed', i, how, error }, how === 'unknown' ? 'unknown' : undefined, i),
    };
  }

  /** Pieces whose outcome was unknown at some point (looked up, or sent again with the may-repeat note), by index. */
  get uncertainPieces(): number[] {
    return this.entries.filter((e): e is Extract<JournalEntry, { t: 'piece_failed' }> => e.t === 'piece_failed' && e.how === 'unknown').map((e) => e.i);
  }
}
