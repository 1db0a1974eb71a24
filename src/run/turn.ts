import type { RunOutcome } from '../agent/types.js';
import { runAgent } from '../agent/loop.js';
import { summaryMessage } from '../agent/summary.js';
import { historyForTurn } from './history-prompt.js';
import type { SessionHistory } from '../session/scripts.js';
import { Workspace } from '../tools/workspace.js';
import type { InboundMessage, OutboundAdapter } from '../channels/types.js';
import { ProgressReporter } from './delivery/progress.js';
import type { TurnJournal } from '../session/journal.js';
import type { TimelineEntry } from './record.js';
import { turnEvents } from './turn-events.js';
import type { RunContext } from './context.js';
import { FencedError } from '../session/store.js';
import { FENCE } from '../session/scripts.js';
import { resolveApprovals } from './approval-step.js';
import type { Turn } from '../session/turn.js';
import { toUserMessage } from './input/user-message.js';
import { turnInput } from './input/turn-input.js';
import { turnTools } from './turn-tools.js';
import { allowanceFor } from './token-allowance.js';
import { AnswerStream, canStream, type StreamedAnswer } from './delivery/answer-stream.js';
import { anySignal } from '../lib/abort.js';
import { promptOf, systemMessage, type AgentRuntime } from './agent-runtime.js';
import { LOAD_SKILL } from '../profiles/skill-tool.js';
import { workspaceScope } from '../profiles/scope.js';
import { turnMemory } from './turn-memory.js';
import { skillMounts } from '../profiles/skills.js';

export const RESET_ANSWER = 'Fresh start: I have forgotten this conversation. Files in the workspace are kept.';

export interface TurnResult {
  outcome: RunOutcome;
  /** The messages the answer was streamed into: the reply edits them. */
  streamed?: StreamedAnswer;
  statusMessageId?: string;
  timeline: TimelineEntry[];
}

const NO_USAGE = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/**
 * The turn's work: the agent run with live progress (or the answer of a control turn), journaled
 * as it goes. A turn an earlier run began is resumed: the journal's steps are replayed, its status
 * message taken over and its attachments not fetched again. Throws a RunSuspended when the run
 * must stop without an outcome (shutdown, or it lost its turn).
 */
export async function executeTurn(
  ctx: RunContext,
  turn: Turn,
  journal: TurnJournal,
  storedHistory: SessionHistory,
  out: OutboundAdapter,
  agent: AgentRuntime,
): Promise<TurnResult> {
  const { deps, session, jobId, log } = ctx;
  if (turn.kind !== 'agent') return controlTurn(turn);
  const timeline: TimelineEntry[] = [];
  const firstStart = noteStart(ctx, journal, turn);

  const controls = deps.active.register(session, jobId);
  const linked = anySignal(ctx.signal ? [ctx.signal, controls.controller.signal] : [controls.controller.signal]);
  const signal = linked.signal;
  const left = firstStart + deps.agent.runTimeoutMs - Date.now();
  // A resumed turn keeps the deadline of its first start; one already past it does not begin again.
  if (left <= 0) controls.controller.abort('run_timeout');
  const deadline = setTimeout(() => controls.controller.abort('run_timeout'), Math.max(0, left));
  const to = turn.taken[turn.taken.length - 1]!.message;
  const progress = new ProgressReporter(out, to, log, Date.now, {
    ...(journal.statusMessageId !== undefined && { id: journal.statusMessageId }),
    ...(deps.delivery.statusAfterMs !== undefined && { after: deps.delivery.statusAfterMs }),
    record: (id) => journal.write([{ t: 'status', messageId: id }]),
  });
  const stream = answerStream(ctx, out, to, journal);
  try {
    if ((await resolveApprovals(ctx, journal, out, to)) === 'cancelled') controls.controller.abort('cancelled');
    progress.start();
    const budget = allowanceFor(ctx, to);
    const [history, prompt] = await Promise.all([historyForTurn(ctx, storedHistory, agent, signal, budget), promptOf(agent)]);
    const workspace = Workspace.forScope(deps.input.workspaceRoot, workspaceScope(agent.profile, session, to), { readOnly: skillMounts(prompt.skills) });
    const messages = turn.taken.map((c) => c.message);
    const [input, memory] = await Promise.all([
      turnInput(ctx, journal, workspace, out, messages, signal),
      turnMemory(ctx, agent, to, messages.map((m) => m.text).join('\n'), history.messages, out),
    ]);
    const tools = turnTools(ctx, workspace, out, to, agent, memory?.tools);
    const events = turnEvents(ctx, tools, timeline, (event) => {
      memory?.onEvent(event);
      return stream?.onEvent(event) || progress.onEvent(event);
    });
    const outcome = await runAgent({
      model: agent.model,
      tools,
      needsApproval: (name) => agent.policy.needsApproval(to.platform, name) || tools.some((t) => t.name === name && t.needsApproval === true),
      ...(to.scheduled && { unattended: 'this is a scheduled run: nobody is there to approve it (TOOLS_EXEC=on lets run_command run in scheduled runs)' }),
      system: systemMessage(
        prompt,
        tools.some((t) => t.name === LOAD_SKILL),
      ),
      // The memory block sits after the history: never stored with the turn, so nobody else's turn carries it.
      history: [...(history.summary ? [summaryMessage(history.summary)] : []), ...history.messages, ...(memory?.message ? [memory.message] : [])],
      input,
      ...(budget && { budget }),
      limits: agent.limits,
      signal,
      suspend: controls.suspend.signal,
      journal,
      onEvent: (event) => events.onEvent(event),
    });
    if (signal.reason === 'lock_lost') throw new FencedError('the run', FENCE.lockLost);
    await stream?.stop();
    const streamed = stream?.answer(outcome);
    return {
      outcome: timedOut(outcome, signal, deps.agent.runTimeoutMs),
      timeline,
      ...(progress.statusMessageId !== undefined && { statusMessageId: progress.statusMessageId }),
      ...(streamed && { streamed }),
    };
  } finally {
    clearTimeout(deadline);
    await Promise.all([progress.stop(), stream?.stop()]);
    linked.dispose();
    deps.active.unregister(session, jobId);
  }
}

/** A turn the loop does not run: /reset's answer, or the honest end of a turn whose runs kept dying. */
function controlTurn(turn: Turn): TurnResult {
  const none = { steps: 0, modelCalls: 0, toolCalls: 0, usage: { ...NO_USAGE }, transcript: turn.taken.map((c) => toUserMessage(c.message)) };
  const outcome: RunOutcome =
    turn.kind === 'reset'
      ? { ...none, state: 'completed', answer: RESET_ANSWER }
      : { ...none, state: 'failed', reason: 'worker_crashed', detail: 'the turn started too many runs that died at the same step' };
  return { outcome, timeline: [] };
}

/** Journals the turn's start (or this run's resume of it); returns when the turn first started, which its deadline counts from. */
function noteStart(ctx: RunContext, journal: TurnJournal, turn: Turn): number {
  const begun = journal.turn;
  journal.record(
    begun ? { t: 'resume', runId: ctx.runId, at: ctx.started } : { t: 'turn', runId: ctx.runId, ids: turn.taken.map((c) => c.message.id), at: ctx.started },
  );
  if (begun) {
    ctx.log.warn({ turnStartedBy: begun.runId, steps: journal.recorded.length }, 'resuming a turn from its journal');
    ctx.deps.metrics?.resumes.inc();
  }
  return begun?.at ?? ctx.started;
}

/** The live answer of this turn, where the platform can stream (continuing what an earlier run of the turn streamed). */
function answerStream(ctx: RunContext, out: OutboundAdapter, to: InboundMessage, journal: TurnJournal): AnswerStream | undefined {
  if (!ctx.deps.delivery.streamAnswers || !canStream(out)) return undefined;
  return new AnswerStream(out, to, ctx.log, (entry) => journal.write([{ t: 'stream', ...entry }]), journal.stream);
}

/** A run cut short by its deadline is a failure with its own reason, not a user's cancel. */
function timedOut(outcome: RunOutcome, signal: AbortSignal, limitMs: number): RunOutcome {
  if (outcome.state !== 'cancelled' || signal.reason !== 'run_timeout') return outcome;
  return { ...outcome, state: 'failed', reason: 'run_timeout', detail: `the turn ran past its ${Math.round(limitMs / 1000)} s limit` };
}
