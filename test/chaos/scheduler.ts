import type { Fleet } from './fleet.js';
import { countLine, whenLineAdded } from './journal-file.js';
import type { ModelCall, ModelDesk } from './model-desk.js';
import type { Rng } from './rng.js';

export type Phase = 'model' | 'tool' | 'delivery';
const PHASES: readonly Phase[] = ['model', 'tool', 'delivery'];

export interface Kill {
  /** Where the targeted session's run was when its worker died (checked afterwards, not assumed). */
  phase: Phase;
  /** For a kill after an edit_file call: whether the line was in the journal when the worker died. */
  effect?: 'written' | 'not written';
  session: string;
  pid: number;
  at: number;
  detail: string;
}

export interface Freeze {
  pid: number;
  sessions: string[];
  at: number;
  ms: number;
}

export interface StrikePlan {
  /** Kills to make at least (more land if messages are still being sent). */
  kills: number;
  freezes: number;
  gapMs: [number, number];
  freezeMs: [number, number];
  /** How long one phase may take to come up before the next phase is tried. */
  windowMs: number;
}

/** How long an answer's confirmation is held while its worker is killed. */
export const DELIVERY_HOLD_MS = 300;

export interface StrikeHooks {
  /** Every message has been sent. */
  sent(): boolean;
  /** Every message sent so far has its answer (nothing left to strike). */
  settled(): boolean;
  /** The path of a session's journal, to see when a tool call takes effect. */
  journalFile(session: string): string;
  log(line: string): void;
}

/**
 * Kills a busy worker every gapMs, choosing the moment by phase in turn: during a model call,
 * after the model asked for edit_file (every other time 2–15 ms after the answer went out, else
 * the instant the line appears in the journal, before the result is back at the model), or while
 * an answer's sendMessage is held unconfirmed; and freezes a busy worker past its lock a few times
 * in between. A killed worker is replaced.
 */
export class KillScheduler {
  readonly kills: Kill[] = [];
  readonly freezes: Freeze[] = [];
  private waiting: { phase: Phase; take: (moment: Moment) => void } | undefined;
  private readonly thawed: Promise<void>[] = [];
  private toolStrikes = 0;

  constructor(
    private readonly fleet: Fleet,
    private readonly model: ModelDesk,
    private readonly rng: Rng,
    private readonly plan: StrikePlan,
    private readonly hooks: StrikeHooks,
  ) {
    model.onToolCall = (call) => {
      if (!call.session) return;
      this.offer('tool', call.session, () => {
        const file = hooks.journalFile(call.session);
        const line = call.appends?.at(-1) ?? '';
        return { call, file, line, before: countLine(file, line), onWrite: false };
      });
    };
  }

  /** The fake Telegram's hold hook: true (hold it) when the scheduler was waiting for this answer. */
  answerPosted(session: string): boolean {
    return this.offer('delivery', session);
  }

  async run(): Promise<void> {
    for (let i = 0; ; i++) {
      const enough = this.kills.length >= this.plan.kills && this.freezes.length >= this.plan.freezes;
      if (this.hooks.sent() && (enough || this.hooks.settled())) break;
      await sleep(this.rng.between(...this.plan.gapMs));
      this.maybeFreeze();
      await this.strike(PHASES[i % PHASES.length]!);
    }
    await Promise.all(this.thawed);
  }

  private async strike(phase: Phase): Promise<void> {
    const moment = phase === 'model' ? await this.duringModelCall() : await this.next(phase);
    const pid = moment === undefined ? undefined : this.fleet.workerOf(moment.session);
    if (moment === undefined || pid === undefined) return this.hooks.log(`no ${phase} moment within ${this.plan.windowMs} ms`);
    if (moment.tool) await this.toolMoment(moment.tool);
    if (phase === 'delivery') await sleep(this.rng.between(20, 100));
    const at = Date.now();
    if (!(await this.fleet.kill(pid))) return this.hooks.log(`pid ${pid} was gone before its ${phase} kill`);
    const kill = this.classify(phase, moment, pid, at);
    this.kills.push(kill);
    this.hooks.log(`kill #${this.kills.length} pid ${pid} ${kill.phase}${kill.effect ? ` (${kill.effect})` : ''}: ${moment.session} — ${kill.detail}`);
  }

  private async toolMoment(tool: ToolMoment): Promise<void> {
    tool.onWrite = this.toolStrikes++ % 2 === 1;
    if (!tool.onWrite) await sleep(this.rng.between(2, 15));
    else if (!(await whenLineAdded(tool.file, tool.line, tool.before, 1_000))) tool.onWrite = false;
  }

  /** A session whose model call is well inside its latency now. */
  private async duringModelCall(): Promise<Moment | undefined> {
    const deadline = Date.now() + this.plan.windowMs;
    while (Date.now() < deadline) {
      const now = Date.now();
      const calls = this.model.inFlight(now).filter((c) => now - c.at >= 50 && c.due - now >= 100 && this.fleet.workerOf(c.session) !== undefined);
      const call = this.rng.pick(calls);
      if (call) return { session: call.session };
      await sleep(20);
    }
    return undefined;
  }

  /** Waits for the next tool call or answer post of a session whose worker can be killed. */
  private next(phase: Phase): Promise<Moment | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        resolve(undefined);
      }, this.plan.windowMs);
      this.waiting = {
        phase,
        take: (moment) => {
          clearTimeout(timer);
          resolve(moment);
        },
      };
    });
  }

  /** Hands the moment to a strike waiting for this phase; `tool` is read only then (it reads the journal). */
  private offer(phase: Phase, session: string, tool?: () => ToolMoment): boolean {
    if (this.waiting?.phase !== phase || this.fleet.workerOf(session) === undefined) return false;
    const { take } = this.waiting;
    this.waiting = undefined;
    take({ session, ...(tool && { tool: tool() }) });
    return true;
  }

  /** Where the run really was: a tool kill may have come after the result went back to the model. */
  private classify(phase: Phase, { session, tool }: Moment, pid: number, at: number): Kill {
    const base = { session, pid, at };
    if (phase === 'delivery') return { ...base, phase, detail: `answer posted, its confirmation held ${DELIVERY_HOLD_MS} ms` };
    if (phase === 'model' || !tool) return { ...base, phase, detail: 'a model call in flight' };
    const answeredAt = tool.call.answeredAt ?? at;
    const when = `${tool.onWrite ? 'on the journal write, ' : ''}${at - answeredAt} ms after edit_file was asked for`;
    if (this.model.calledBetween(session, answeredAt, at)) return { ...base, phase: 'model', detail: `${when}, the result already back at the model` };
    const written = countLine(tool.file, tool.line) > tool.before;
    return { ...base, phase, effect: written ? 'written' : 'not written', detail: when };
  }

  /** Freezes are spread over the planned kills; one at a time, on a worker that holds a session. */
  private maybeFreeze(): void {
    const due = Math.floor(((this.freezes.length + 1) * this.plan.kills) / (this.plan.freezes + 1));
    if (this.freezes.length >= this.plan.freezes || this.kills.length < due || this.fleet.anyFrozen()) return;
    const busy = [...this.fleet.busy()];
    const target = this.rng.pick(busy);
    if (!target) return;
    const [pid, sessions] = target;
    const ms = this.rng.between(...this.plan.freezeMs);
    this.freezes.push({ pid, sessions, at: Date.now(), ms });
    this.hooks.log(`freeze #${this.freezes.length} pid ${pid} for ${ms} ms (holds ${sessions.join(', ')})`);
    this.thawed.push(this.fleet.freeze(pid, ms));
  }
}

/** The session a strike aims at. */
interface Moment {
  session: string;
  tool?: ToolMoment;
}

/** A tool strike's model call that asked for the edit, and the journal line the edit adds. */
interface ToolMoment {
  call: ModelCall;
  file: string;
  line: string;
  /** How many times the line was in the journal when the model asked for it (a repeat adds it again). */
  before: number;
  /** Killed the instant the line appeared, rather than after a fixed delay. */
  onWrite: boolean;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
