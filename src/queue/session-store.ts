import { RunSuspended } from '../agent/suspend.js';
import type { InboundMessage } from '../channels/types.js';
import type { SessionKeys } from './keys.js';
import { CLAIMED, FENCE, type ScriptedRedis } from './scripts.js';
import type { ClaimedMessage } from './turn.js';

/** The run refused to go on because another process now holds its job or session. */
export class FencedError extends RunSuspended {
  override readonly name = 'FencedError';
  constructor(what: string, code: number) {
    super('fenced', `${what} refused: ${code === FENCE.lockLost ? 'the job lock was lost' : code === FENCE.notOwner ? 'another run took the session over' : 'the inbox head changed'}`);
  }
}

export type Claim =
  /** Another live run owns the session: this job leaves the inbox to it. */
  | { kind: 'busy'; holder: string }
  /** No waiting messages and no reply to deliver: the session was released. */
  | { kind: 'empty'; unreadable: number }
  | {
      kind: 'claimed';
      /** A reply an earlier run committed and did not confirm delivered (JSON, as committed). */
      pendingReply?: string;
      /** The session's journal: the unfinished turn's steps, or the pending reply's delivery. */
      journal: string[];
      /** The inbox head (up to foldMax), each with its crash count. */
      messages: ClaimedMessage[];
      /** Entries at the head no script could read, moved to the unreadable list by this claim. */
      unreadable: number;
    };

export interface TurnCommit {
  taken: readonly ClaimedMessage[];
  history: { mode: 'append' | 'reset' | 'keep'; entry: string };
  historyMax: number;
  last: string;
  outbox: string;
}

/**
 * One run's fenced view of its session's state in Redis: claim, journal, commit, settle. Every
 * write checks the run's job lock token and its session ownership in the same script; a refusal
 * is a FencedError (the run must stop without another side effect).
 */
export class SessionStore {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: SessionKeys,
    readonly session: string,
    private readonly fence: { jobId: string; token: string },
  ) {}

  async claim(foldMax: number): Promise<Claim> {
    const k = this.keys;
    const s = this.session;
    const r = await this.redis.sbClaim(this.lock, k.owner(s), k.inbox(s), k.claims(s), k.outbox(s), k.journal(s), k.unreadable, this.fence.token, this.fence.jobId, k.jobBase, foldMax);
    const status = Number(r[0]);
    if (status === FENCE.lockLost) throw new FencedError('claim', status);
    if (status === CLAIMED.busy) return { kind: 'busy', holder: String(r[1]) };
    if (status === CLAIMED.empty) return { kind: 'empty', unreadable: Number(r[1] ?? 0) };
    const outbox = String(r[1]);
    const unreadable = Number(r[2]);
    const journalLength = Number(r[3]);
    const journal = r.slice(4, 4 + journalLength).map(String);
    const messages: ClaimedMessage[] = [];
    for (let i = 4 + journalLength; i < r.length; i += 2) {
      const raw = String(r[i + 1]);
      messages.push({ claims: Number(r[i]), raw, message: JSON.parse(raw) as InboundMessage });
    }
    return { kind: 'claimed', journal, messages, unreadable, ...(outbox && { pendingReply: outbox }) };
  }

  /** Appends entries (JSON) to the session's journal; `fresh` drops what it held first. */
  async journal(entries: readonly string[], fresh = false): Promise<void> {
    if (entries.length === 0 && !fresh) return;
    const k = this.keys;
    const code = await this.redis.sbJournal(this.lock, k.owner(this.session), k.journal(this.session), this.fence.token, this.fence.jobId, fresh ? '1' : '0', ...entries);
    if (code < 0) throw new FencedError('journal write', code);
  }

  /** Consumes the turn's messages, records history, status and the reply to deliver. Returns how many messages are left. */
  async commit(c: TurnCommit): Promise<number> {
    const k = this.keys;
    const s = this.session;
    const ids = c.taken.map((m) => m.message.id);
    const left = await this.redis.sbCommit(
      this.lock, k.owner(s), k.inbox(s), k.history(s), k.last(s), k.outbox(s), k.claims(s), k.pending, k.journal(s), k.historyCount(s), k.historySummary(s),
      this.fence.token, this.fence.jobId, c.history.mode, c.history.entry, c.historyMax, c.last, c.outbox, s, ids.length, ...ids, ...c.taken.map((m) => m.raw),
    );
    if (left < 0) throw new FencedError('commit', left);
    return left;
  }

  /** Stores the history summary (JSON) while this run holds the session. */
  async saveSummary(json: string): Promise<void> {
    const code = await this.redis.sbFencedSet(this.lock, this.keys.owner(this.session), this.keys.historySummary(this.session), this.fence.token, this.fence.jobId, json);
    if (code < 0) throw new FencedError('history summary write', code);
  }

  /** Clears the delivered reply (`delivered`: its outbox JSON, '' for none) and, with `release`, gives the session up. */
  async settle(delivered: string, release: boolean): Promise<void> {
    const k = this.keys;
    const s = this.session;
    const code = await this.redis.sbSettle(this.lock, k.owner(s), k.outbox(s), k.journal(s), k.inbox(s), k.pending, this.fence.token, this.fence.jobId, delivered, release ? '1' : '0', s);
    if (code < 0) throw new FencedError('settle', code);
  }

  private get lock(): string {
    return this.keys.jobLock(this.fence.jobId);
  }
}
