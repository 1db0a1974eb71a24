import { RunSuspended } from '../agent/suspend.js';
import type { Redis } from 'ioredis';
import type { SessionKeys } from '../queue/keys.js';
import { runScript } from '../queue/redis-scripts.js';
import { CLAIM, COMMIT, FENCE, FENCED_SET, JOURNAL, SETTLE, type Claim, type Fenced } from './scripts.js';
import type { ClaimedMessage } from './turn.js';

export type { Claim } from './scripts.js';

/** The run refused to go on because another process now holds its job or session. */
export class FencedError extends RunSuspended {
  override readonly name = 'FencedError';
  constructor(what: string, code: number) {
    super(
      'fenced',
      `${what} refused: ${code === FENCE.lockLost ? 'the job lock was lost' : code === FENCE.notOwner ? 'another run took the session over' : 'the inbox head changed'}`,
    );
  }
}

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
    private readonly redis: Redis,
    private readonly keys: SessionKeys,
    readonly session: string,
    private readonly fence: { jobId: string; token: string },
  ) {}

  async claim(foldMax: number): Promise<Claim> {
    const k = this.keys;
    const s = this.session;
    return this.fenced(
      'claim',
      await runScript(this.redis, CLAIM, {
        keys: {
          lock: this.lock,
          owner: k.owner(s),
          inbox: k.inbox(s),
          claims: k.claims(s),
          outbox: k.outbox(s),
          journal: k.journal(s),
          unreadable: k.unreadable,
          history: k.history(s),
          historyCount: k.historyCount(s),
          historySummary: k.historySummary(s),
          agent: k.agentOf(s),
        },
        args: { ...this.fence, jobKeyBase: k.jobBase, foldMax },
      }),
    );
  }

  /** Appends entries (JSON) to the session's journal; `fresh` drops what it held first. */
  async journal(entries: readonly string[], fresh = false): Promise<void> {
    if (entries.length === 0 && !fresh) return;
    this.fenced(
      'journal write',
      await runScript(this.redis, JOURNAL, {
        keys: { lock: this.lock, owner: this.keys.owner(this.session), journal: this.keys.journal(this.session) },
        args: { ...this.fence, fresh: fresh ? '1' : '0', entries },
      }),
    );
  }

  /**
   * Records how many messages at the inbox head this run's turn has taken (the fold policy's
   * choice): SESSION_QUEUE_MAX counts only the messages behind them. The commit clears it.
   */
  async take(count: number): Promise<void> {
    await this.set('taken count write', this.keys.taken(this.session), String(count));
  }

  /** Consumes the turn's messages, records history, status and the reply to deliver. Returns how many messages are left. */
  async commit(c: TurnCommit): Promise<number> {
    const k = this.keys;
    const s = this.session;
    const done = this.fenced(
      'commit',
      await runScript(this.redis, COMMIT, {
        keys: {
          lock: this.lock,
          owner: k.owner(s),
          inbox: k.inbox(s),
          history: k.history(s),
          last: k.last(s),
          outbox: k.outbox(s),
          claims: k.claims(s),
          pending: k.pending,
          journal: k.journal(s),
          historyCount: k.historyCount(s),
          historySummary: k.historySummary(s),
          taken: k.taken(s),
          agent: k.agentOf(s),
        },
        args: {
          ...this.fence,
          historyMode: c.history.mode,
          historyEntry: c.history.entry,
          historyMax: c.historyMax,
          last: c.last,
          outbox: c.outbox,
          session: s,
          count: c.taken.length,
          ids: c.taken.map((m) => m.message.id),
          raws: c.taken.map((m) => m.raw),
        },
      }),
    );
    return done.left;
  }

  /** Stores the history summary (JSON) while this run holds the session. */
  async saveSummary(json: string): Promise<void> {
    await this.set('history summary write', this.keys.historySummary(this.session), json);
  }

  /** Clears the delivered reply (`delivered`: its outbox JSON, '' for none) and, with `release`, gives the session up. */
  async settle(delivered: string, release: boolean): Promise<void> {
    const k = this.keys;
    const s = this.session;
    this.fenced(
      'settle',
      await runScript(this.redis, SETTLE, {
        keys: { lock: this.lock, owner: k.owner(s), outbox: k.outbox(s), journal: k.journal(s), inbox: k.inbox(s), pending: k.pending },
        args: { ...this.fence, delivered, release: release ? '1' : '0', session: s },
      }),
    );
  }

  /** Records the agent that answers the session (when none was recorded at queueing, or it no longer exists). */
  async recordAgent(name: string): Promise<void> {
    await this.set('agent write', this.keys.agentOf(this.session), name);
  }

  private async set(what: string, key: string, value: string): Promise<void> {
    this.fenced(
      what,
      await runScript(this.redis, FENCED_SET, { keys: { lock: this.lock, owner: this.keys.owner(this.session), key }, args: { ...this.fence, value } }),
    );
  }

  /** A script's result, or its refusal thrown as a FencedError. */
  private fenced<R extends { kind: string }>(what: string, result: R | Fenced): Exclude<R, Fenced> {
    if (result.kind === 'fenced') throw new FencedError(what, (result as Fenced).code);
    return result as Exclude<R, Fenced>;
  }

  private get lock(): string {
    return this.keys.jobLock(this.fence.jobId);
  }
}
