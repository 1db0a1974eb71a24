import { UnrecoverableError, WaitingError, type Job } from 'bullmq';
import type { ChatMessage, RunOutcome } from '../agent/types.js';
import { ApprovalPending, RunSuspended } from '../agent/suspend.js';
import { requestApproval } from './approval-step.js';
import { compactTurn, withoutImages } from '../agent/history.js';
import type { SessionHistory } from '../session/scripts.js';
import type { InboundMessage, OutboundAdapter } from '../channels/types.js';
import { deliverReply, type DeliveryReport, type OutboxRecord } from './delivery/reply.js';
import { honestLine } from './delivery/honest-line.js';
import { addRunJob } from '../queue/run-queue.js';
import { forDisplay, jobName, type RunJobData, type RunResult } from '../queue/job-data.js';
import { parseJournal, TurnJournal } from '../session/journal.js';
import { runViewPath } from './record.js';
import { JobTrace } from './job-trace.js';
import { lastRunOf, recordOf, resultOf, skippedResult } from './outcome.js';
import type { RunContext, RunDeps } from './context.js';
import { executeTurn, type TurnResult } from './turn.js';
import { SessionStore } from '../session/store.js';
import { selectTurn, MAX_CLAIMS, type ClaimedMessage, type Turn } from '../session/turn.js';
import { toUserMessage } from './input/user-message.js';
import { doneSoFar } from '../session/journal-summary.js';
import { recordScheduledRun } from '../schedules/outcome.js';
import type { AgentRuntime } from './agent-runtime.js';
import { withoutRecalledMemory } from '../memory/history.js';

export type { RunDeps } from './context.js';

/** Turns kept in a session's history list (the token budget picks from these). */
const HISTORY_MAX_TURNS = 200;
/** Tool results longer than this are cut when the turn is stored in history. */
const HISTORY_TOOL_RESULT_CHARS = 2_000;

type Processor = (job: Job<RunJobData, RunResult>, token: string | undefined, signal?: AbortSignal) => Promise<RunResult>;

/**
 * One job = one agent run of one session, in phases around one run context: claim the inbox head
 * (fenced) → deliver a reply an earlier run left → run the turn, or resume it from its journal →
 * commit the turn and the reply in one fenced script → deliver it, piece by piece through the
 * journal → finish (record, count, and fail the job unless the run completed). A run stopped by a
 * shutdown goes back to waiting, to be resumed by any worker.
 */
export function createProcessor(deps: RunDeps): Processor {
  return async (job, token, signal) => {
    const ctx = runContext(deps, job, token, signal);
    try {
      const claimed = await claim(ctx);
      if (claimed.kind === 'skipped') return claimed.result;
      const { turn, journal, history, taken, agent } = await begin(ctx, claimed);
      const to = turn.taken[turn.taken.length - 1]!.message;
      const out = deps.delivery.outbound(to.platform);
      const done = await runOrSuspend(ctx, turn, journal, history, out, agent);
      await taken;
      const { record, outbox, left } = await commit(ctx, turn, journal, done, to, agent);
      // The turn is committed (the commit was the fence: a worker that froze past its lock stops
      // there): from here a crash re-delivers the outbox, it never re-runs the turn.
      const delivery = new TurnJournal(ctx.store, []);
      const report = await deliver(ctx, out, record, delivery);
      // The session is released (and its next job added) while the run is recorded: finish awaits both.
      const settled = Promise.all([ctx.store.settle(outbox, true), left > 0 ? addRunJob(deps.queue, jobName(to), { v: 1, session: ctx.session }) : undefined]);
      settled.catch(() => undefined);
      return await finish(ctx, done, turn, record, report, [...journal.entries, ...delivery.entries], settled, agent);
    } finally {
      // Every way out (an answer, a skip, a parked approval, a shutdown, a failure) writes what the dashboard is still owed.
      await ctx.trace.close();
    }
  };
}

function runContext(deps: RunDeps, job: Job<RunJobData, RunResult>, token: string | undefined, signal: AbortSignal | undefined): RunContext {
  if (!token || job.id === undefined) throw new Error('a run needs a job id and a lock token');
  const session = job.data.session;
  const jobId = job.id;
  const runId = `${jobId}.${job.attemptsStarted}`;
  const log = deps.log.child({ platform: session.slice(0, session.indexOf(':')), session, jobId, runId });
  return {
    deps,
    job,
    jobId,
    token,
    session,
    runId,
    started: Date.now(),
    store: new SessionStore(deps.redis, deps.keys, session, { jobId, token }),
    log,
    trace: new JobTrace(deps.redis, deps.keys, job, log),
    ...(signal && { signal }),
  };
}

type Claimed =
  | { kind: 'skipped'; result: RunResult }
  | { kind: 'claimed'; messages: ClaimedMessage[]; journal: string[]; history: SessionHistory; agent: string | undefined };

/** Claims the inbox head under the session fence, first delivering a reply an earlier run committed and did not confirm. */
async function claim(ctx: RunContext): Promise<Claimed> {
  const { deps } = ctx;
  const skipped = (reason: 'session_busy' | 'inbox_empty'): Claimed => ({ kind: 'skipped', result: skippedResult(ctx, reason) });
  const claim = await ctx.store.claim(deps.foldMax);
  if (claim.kind !== 'busy' && claim.unreadable > 0) {
    ctx.log.error({ entries: claim.unreadable, list: deps.keys.unreadable }, 'inbox entries no run can read were moved aside; the session goes on');
    deps.metrics?.unreadable.inc(claim.unreadable);
  }
  if (claim.kind === 'busy') {
    ctx.trace.line(`session is held by run ${claim.holder}; this job leaves the inbox to it`);
    ctx.log.info({ holder: claim.holder }, 'session busy, job skipped');
    return skipped('session_busy');
  }
  if (claim.kind === 'empty') return skipped('inbox_empty');
  if (claim.pendingReply !== undefined) await deliverPending(ctx, claim.pendingReply, claim.journal);
  if (claim.messages.length === 0) {
    await ctx.store.settle('', true);
    return skipped('inbox_empty');
  }
  // The journal was the pending reply's (delivered above), or it is the unfinished turn's.
  return {
    kind: 'claimed',
    messages: claim.messages,
    journal: claim.pendingReply === undefined ? claim.journal : [],
    history: claim.history,
    agent: claim.agent,
  };
}

/**
 * Picks the turn (its journal and the session's history came with the claim) and its agent (the
 * one recorded with the session), and records how many messages it takes: that write goes on
 * while the turn runs (`taken`, awaited before the commit), with the agent's when the session had none.
 */
async function begin(
  ctx: RunContext,
  claimed: Extract<Claimed, { kind: 'claimed' }>,
): Promise<{ turn: Turn; journal: TurnJournal; history: SessionHistory; taken: Promise<unknown>; agent: AgentRuntime }> {
  const { deps, job, runId } = ctx;
  const journal = new TurnJournal(ctx.store, parseJournal(claimed.journal));
  const turn = await takeTurn(ctx, claimed.messages, journal);
  const messages = turn.taken.map((c) => c.message);
  const agent = deps.agents.forSession(claimed.agent, messages[0]!);
  const name = agent.profile.name;
  if (claimed.agent !== undefined && claimed.agent !== name)
    ctx.log.warn({ recorded: claimed.agent, agent: name }, "the session's agent is no longer configured; the bindings chose another");
  ctx.log = ctx.log.child({ agent: name });
  deps.metrics?.queueWait.observe(Math.max(0, ctx.started - messages[0]!.receivedAt) / 1000);
  ctx.trace.setData({ ...job.data, messages: messages.map(forDisplay), runId, agent: name });
  ctx.trace.line(`run ${runId} ${journal.turn ? 'resumes' : 'takes'} ${messages.length} message(s): ${messages.map((m) => m.id).join(', ')}`);
  // SESSION_QUEUE_MAX counts the messages behind the taken ones. A fenced refusal surfaces where
  // it is awaited (before the commit); a run that ends before that has nothing left to write.
  // Without AGENTS_CONFIG there is one agent: nothing to record.
  const record = deps.agents.roster.configured && claimed.agent !== name;
  const taken = Promise.all([ctx.store.take(turn.taken.length), record ? ctx.store.recordAgent(name) : undefined]);
  taken.catch(() => undefined);
  ctx.log.info({ messages: messages.length, turn: turn.kind, resumed: journal.turn !== undefined }, 'run started');
  return { turn, journal, history: claimed.history, taken, agent };
}

/** Commits the turn, its history entry, the session's last run and the reply to deliver, in one fenced script. */
async function commit(
  ctx: RunContext,
  turn: Turn,
  journal: TurnJournal,
  done: TurnResult,
  to: InboundMessage,
  agent: AgentRuntime,
): Promise<{ record: OutboxRecord; outbox: string; left: number }> {
  const text = replyText(ctx.deps, agent, done.outcome, journal);
  const statusMessageId = done.statusMessageId ?? journal.statusMessageId;
  const record: OutboxRecord = {
    v: 1,
    runId: ctx.runId,
    session: ctx.session,
    to,
    state: done.outcome.state,
    text,
    messageIds: turn.taken.map((c) => c.message.id),
    ...(done.outcome.reason && { reason: done.outcome.reason }),
    // A turn given up without running (crashed) still takes down the status message its runs left.
    ...(statusMessageId !== undefined && { statusMessageId }),
    ...(done.streamed && { streamed: done.streamed }),
  };
  const outbox = JSON.stringify(record);
  const left = await ctx.store.commit({
    taken: turn.taken,
    history: historyEntry(turn, done.outcome),
    historyMax: HISTORY_MAX_TURNS,
    last: JSON.stringify(lastRunOf(resultOf(ctx, done.outcome, record.messageIds, agent.profile.name))),
    outbox,
  });
  return { record, outbox, left };
}

/** The turn this run answers: the one its journal began (the same messages), else the fold policy's. */
async function takeTurn(ctx: RunContext, claimed: ClaimedMessage[], journal: TurnJournal): Promise<Turn> {
  const begun = journal.turn;
  if (!begun) {
    if (journal.entries.length > 0) await journal.discard();
    return selectTurn(claimed);
  }
  const taken = claimed.slice(0, begun.ids.length);
  if (taken.length === begun.ids.length && taken.every((c, i) => c.message.id === begun.ids[i])) {
    return taken[0]!.claims > MAX_CLAIMS ? { kind: 'crashed', taken } : { kind: 'agent', taken };
  }
  // Nothing but a manual edit of Redis gets here: the journal is not about the waiting messages.
  ctx.log.error(
    { journalIds: begun.ids, head: claimed.map((c) => c.message.id) },
    'the journal names messages that are not at the inbox head; starting the turn afresh',
  );
  await journal.discard();
  return selectTurn(claimed);
}

/**
 * Runs the turn. A call that needs approval parks the job until a decision (requestApproval
 * throws BullMQ's DelayedError) unless it is decided at once, and then the turn runs on from the
 * journal. A run stopped for a shutdown writes what it did and goes back to waiting for any worker.
 */
async function runOrSuspend(
  ctx: RunContext,
  turn: Turn,
  journal: TurnJournal,
  history: SessionHistory,
  out: OutboundAdapter,
  agent: AgentRuntime,
): Promise<TurnResult> {
  for (;;) {
    try {
      return await executeTurn(ctx, turn, journal, history, out, agent);
    } catch (err) {
      if (err instanceof ApprovalPending) {
        await requestApproval(ctx, journal, out, turn.taken[turn.taken.length - 1]!.message, err.request);
        continue;
      }
      if (!(err instanceof RunSuspended) || err.why !== 'shutdown') throw err;
      await journal.writeBuffer();
      await ctx.job.moveToWait(ctx.token);
      ctx.trace.line(`run ${ctx.runId} stopped at a step boundary for a shutdown; another run resumes it from the journal`);
      ctx.log.info('run suspended for shutdown; the job waits for another worker');
      throw new WaitingError();
    }
  }
}

/** The answer, or the honest line of how the run ended (naming what was done, when it crashed mid-way). */
function replyText(deps: RunDeps, agent: AgentRuntime, outcome: RunOutcome, journal: TurnJournal): string {
  if (outcome.state === 'completed') return outcome.answer!;
  return honestLine(outcome.reason, {
    maxSteps: agent.limits.maxSteps,
    runTimeoutMs: deps.agent.runTimeoutMs,
    done: doneSoFar(journal.recorded),
    now: Date.now(),
    ...(deps.agent.tokenBudget && { dailyTokens: deps.agent.tokenBudget.limit }),
  });
}

/** Delivers through the journal's ledger; a reply the platform refused for good is written down as such. */
async function deliver(ctx: RunContext, out: OutboundAdapter, record: OutboxRecord, journal: TurnJournal): Promise<DeliveryReport> {
  const report = await deliverReply(out, record, ctx.log, journal.ledger());
  if (report.undeliverable !== undefined) {
    await journal.write([{ t: 'undeliverable', error: report.undeliverable }]);
    ctx.deps.metrics?.undeliverable.inc({ platform: record.to.platform });
  }
  const uncertain = journal.uncertainPieces;
  if (uncertain.length > 0)
    ctx.log.warn(
      { pieces: uncertain },
      'some reply pieces had an unknown outcome: each was repeated by its idempotency key, placed again (a placeholder), looked up on the platform, or sent again with a may-repeat note',
    );
  return report;
}

/** A reply an earlier run committed but did not confirm delivered (its worker died): deliver what is missing. */
async function deliverPending(ctx: RunContext, raw: string, journal: string[]): Promise<void> {
  const record = JSON.parse(raw) as OutboxRecord;
  ctx.log.warn({ pendingRun: record.runId, journaled: journal.length }, 'delivering the rest of a reply an earlier run committed');
  await deliver(ctx, ctx.deps.delivery.outbound(record.to.platform), record, new TurnJournal(ctx.store, parseJournal(journal)));
  await ctx.store.settle(raw, false);
}

/** What the session's history keeps of a turn: the whole exchange when completed, else the request and a note. */
function historyEntry(turn: Turn, outcome: RunOutcome): { mode: 'append' | 'reset' | 'keep'; entry: string } {
  if (turn.kind === 'reset') return { mode: 'reset', entry: '' };
  if (outcome.state === 'completed')
    return { mode: 'append', entry: JSON.stringify(compactTurn(withoutRecalledMemory(outcome.transcript), HISTORY_TOOL_RESULT_CHARS)) };
  // The user messages as the model read them (a long one cut, with where it is saved), when it read any.
  const read = outcome.transcript.filter((m) => m.role === 'user');
  const users = (read.length > 0 ? read : turn.taken.map((c) => toUserMessage(c.message))).map(withoutImages);
  const note: ChatMessage = { role: 'assistant', content: `(No answer was given to this: the run ended ${outcome.state}, ${outcome.reason}.)` };
  return { mode: 'append', entry: JSON.stringify([...users, note]) };
}

/** Logs, counts and records the run while its session is settled (`settled`); fails the job unless the run completed. */
async function finish(
  ctx: RunContext,
  done: TurnResult,
  turn: Turn,
  record: OutboxRecord,
  report: DeliveryReport,
  journal: TurnJournal['entries'],
  settled: Promise<unknown>,
  agent: AgentRuntime,
): Promise<RunResult> {
  const { outcome } = done;
  const { deps, runId, log } = ctx;
  const result = resultOf(ctx, outcome, record.messageIds, agent.profile.name, report);
  log.info(
    {
      state: result.state,
      reason: result.reason,
      steps: result.steps,
      toolCalls: result.toolCalls,
      tokens: result.usage.totalTokens,
      ms: result.ms,
      undeliverable: report.undeliverable,
    },
    'run ended',
  );
  deps.metrics?.onRunEnded(outcome, result.ms / 1000, agent.profile.name);
  const scheduled = turn.taken.find((c) => c.message.scheduled)?.message;
  if (scheduled && deps.schedules) {
    await recordScheduledRun(
      deps.schedules.book,
      scheduled,
      {
        state: outcome.state,
        ...(outcome.reason && { reason: outcome.reason }),
        ...(result.undeliverable !== undefined && { undeliverable: result.undeliverable }),
      },
      deps.delivery.outbound(scheduled.platform),
      log,
      deps.metrics,
    );
  }
  ctx.trace.line(`run view: ${runViewPath(runId)}`);
  // A run that did not complete, or a reply the platform refused for good, is a failed job and
  // never retried: repeating cannot change either (the reply is settled, the session goes on).
  const failed = outcome.state !== 'completed' || report.undeliverable !== undefined;
  if (failed) ctx.trace.line(`result ${JSON.stringify(result)}`);
  await Promise.all([
    deps.runs
      .save(recordOf(ctx, result, outcome, { messages: turn.taken.map((c) => forDisplay(c.message)), timeline: done.timeline, journal }))
      .catch((err: unknown) => log.warn({ err }, 'run record not saved')),
    ctx.trace.close(),
    settled,
  ]);
  if (failed) {
    if (report.undeliverable !== undefined) throw new UnrecoverableError(`undeliverable: ${report.undeliverable}`);
    throw new UnrecoverableError(`${outcome.state}: ${outcome.reason}${outcome.detail ? ` — ${outcome.detail}` : ''}`);
  }
  return result;
}
