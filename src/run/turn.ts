import type { RunOutcome } from '../agent/types.js';
import { runAgent } from '../agent/loop.js';
import { summaryMessage } from '../agent/summary.js';
import { historyForTurn, type StoredHistory } from './history-prompt.js';
import { buildTools } from '../tools/index.js';
import { Workspace } from '../tools/workspace.js';
import type { Attachment, InboundMessage, OutboundAdapter } from '../channels/types.js';
import { ProgressReporter } from './delivery/progress.js';
import { saveAttachments } from './input/attachments.js';
import type { SavedAttachment } from '../session/journal.js';
import type { TurnJournal } from '../session/journal.js';
import { jobLogLine } from './job-log.js';
import { timelineEntry, type TimelineEntry } from './record.js';
import type { RunContext } from './context.js';
import { FencedError } from '../session/store.js';
import { FENCE } from '../session/scripts.js';
import { resolveApprovals } from './approval-step.js';
import type { Turn } from '../session/turn.js';
import { toUserMessage } from './input/user-message.js';
import { fitMessages } from './input/long-message.js';
import { imagesOf } from './input/images.js';
import { allowanceFor } from './token-allowance.js';
import { createScheduleTools } from '../schedules/tools.js';
import { createSendFileTool } from './delivery/send-file.js';
import { AnswerStream, canStream, type StreamedAnswer } from './delivery/answer-stream.js';

export const RESET_ANSWER = 'Fresh start: I have forgotten this conversation. Files in the workspace are kept.';

export interface TurnResult {
  outcome: RunOutcome;
  /** The messages the answer was streamed into: the reply edits them. */
  streamed?: StreamedAnswer;
  statusMessageId?: string;
  timeline: TimelineEntry[];
  /** The narration's job-log lines, written while the run went on. */
  jobLogs: Promise<void>;
}

const NO_USAGE = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/**
 * The turn's work: the agent run with live progress (or the answer of a control turn), journaled
 * as it goes. A turn an earlier run began is resumed: the journal's steps are replayed, its status
 * message taken over and its attachments not fetched again. Throws a RunSuspended when the run
 * must stop without an outcome (shutdown, or it lost its turn).
 */
export async function executeTurn(ctx: RunContext, turn: Turn, journal: TurnJournal, storedHistory: Promise<StoredHistory>, out: OutboundAdapter): Promise<TurnResult> {
  const { deps, session, jobId, log } = ctx;
  const none = { steps: 0, modelCalls: 0, toolCalls: 0, usage: { ...NO_USAGE }, transcript: turn.taken.map((c) => toUserMessage(c.message)) };
  const timeline: TimelineEntry[] = [];
  if (turn.kind === 'reset') return { outcome: { ...none, state: 'completed', answer: RESET_ANSWER }, timeline, jobLogs: Promise.resolve() };
  if (turn.kind === 'crashed') {
    return { outcome: { ...none, state: 'failed', reason: 'worker_crashed', detail: 'the turn started too many runs that died at the same step' }, timeline, jobLogs: Promise.resolve() };
  }

  const begun = journal.turn;
  const firstStart = begun?.at ?? ctx.started;
  journal.record(begun ? { t: 'resume', runId: ctx.runId, at: ctx.started } : { t: 'turn', runId: ctx.runId, ids: turn.taken.map((c) => c.message.id), at: ctx.started });
  if (begun) {
    log.warn({ turnStartedBy: begun.runId, steps: journal.recorded.length }, 'resuming a turn from its journal');
    deps.metrics?.resumes.inc();
  }

  const controls = deps.active.register(session, jobId);
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, controls.controller.signal]) : controls.controller.signal;
  const left = firstStart + deps.agent.runTimeoutMs - Date.now();
  // A resumed turn keeps the deadline of its first start; one already past it does not begin again.
  if (left <= 0) controls.controller.abort('run_timeout');
  const deadline = setTimeout(() => controls.controller.abort('run_timeout'), Math.max(0, left));
  const to = turn.taken[turn.taken.length - 1]!.message;
  const progress = new ProgressReporter(out, to, log, Date.now, { ...(journal.statusMessageId !== undefined && { id: journal.statusMessageId }), record: (id) => journal.write([{ t: 'status', messageId: id }]) });
  const stream = answerStream(ctx, out, to, journal);
  let logs = Promise.resolve();
  try {
    if ((await resolveApprovals(ctx, journal, out, to)) === 'cancelled') controls.controller.abort('cancelled');
    progress.start();
    const budget = allowanceFor(ctx, to);
    const history = await historyForTurn(ctx, await storedHistory, deps.agent.historyTokens, signal, budget);
    const workspace = Workspace.forScope(deps.input.workspaceRoot, session);
    const messages = turn.taken.map((c) => c.message);
    const saved = await attachmentsOf(ctx, journal, workspace, out, messages, signal);
    const images = deps.input.vision ? await imagesOf(workspace, saved, deps.input.vision.imageMaxBytes, log) : undefined;
    const shown = await fitMessages(workspace, messages, deps.input.messageMaxChars, log);
    const schedules = deps.schedules?.offered ? createScheduleTools(deps.schedules.book, { from: to, defaultTz: deps.schedules.defaultTz, approvers: deps.schedules.approvers }) : [];
    const sendFile = createSendFileTool(workspace, out, to);
    const tools = [...buildTools(workspace, deps.tools.exec ? { exec: deps.tools.exec } : {}), ...(sendFile ? [sendFile] : []), ...schedules, ...(deps.tools.extraTools?.(workspace, to.platform) ?? [])].filter((t) => deps.tools.policy.offered(to.platform, t.name));
    const outcome = await runAgent({
      model: deps.agent.model,
      tools,
      needsApproval: (name) => deps.tools.policy.needsApproval(to.platform, name) || tools.some((t) => t.name === name && t.needsApproval === true),
      ...(to.scheduled && { unattended: 'this is a scheduled run: nobody is there to approve it (TOOLS_EXEC=on lets run_command run in scheduled runs)' }),
      system: deps.agent.system,
      history: history.summary ? [summaryMessage(history.summary), ...history.messages] : history.messages,
      input: shown.map((m) => toUserMessage(m, saved, images)),
      ...(budget && { budget }),
      limits: deps.agent.limits,
      signal,
      suspend: controls.suspend.signal,
      journal,
      onEvent: (event) => {
        if (!stream?.onEvent(event)) progress.onEvent(event);
        deps.metrics?.onAgentEvent(event, tools);
        const entry = timelineEntry(event, Date.now() - ctx.started);
        if (entry) timeline.push(entry);
        const line = jobLogLine(event);
        const step = 'step' in event ? event.step : undefined;
        logs = logs
          .then(async () => {
            if (line) await ctx.job.log(line);
            if (event.type === 'model_call' || event.type === 'tool_start') {
              await ctx.job.updateProgress({ step, phase: event.type === 'model_call' ? 'model' : `tool ${event.name}` });
            }
          })
          .catch((err: unknown) => log.warn({ err }, 'job log write failed'));
      },
    });
    if (signal.reason === 'lock_lost') throw new FencedError('the run', FENCE.lockLost);
    await stream?.stop();
    const streamed = stream?.answer(outcome);
    return {
      outcome: timedOut(outcome, signal, deps.agent.runTimeoutMs),
      timeline,
      jobLogs: logs,
      ...(progress.statusMessageId !== undefined && { statusMessageId: progress.statusMessageId }),
      ...(streamed && { streamed }),
    };
  } finally {
    clearTimeout(deadline);
    await Promise.all([progress.stop(), stream?.stop()]);
    deps.active.unregister(session, jobId);
  }
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

/** The turn's attachments in its workspace: as an earlier run of the turn saved them, else downloaded now. */
async function attachmentsOf(
  ctx: RunContext,
  journal: TurnJournal,
  workspace: Workspace,
  out: OutboundAdapter,
  messages: InboundMessage[],
  signal: AbortSignal,
): Promise<Map<Attachment, SavedAttachment>> {
  const attachments = messages.flatMap((m) => m.attachments);
  const recorded = journal.attachments;
  if (recorded && recorded.length === attachments.length) return new Map(attachments.map((a, i) => [a, recorded[i]!]));
  const saved = await saveAttachments(out, workspace, messages, ctx.deps.input.attachmentMaxBytes, signal, ctx.log);
  if (attachments.length > 0) journal.record({ t: 'attachments', saved: attachments.map((a) => saved.get(a)!) });
  return saved;
}
