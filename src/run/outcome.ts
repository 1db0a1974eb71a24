import type { RunOutcome } from '../agent/types.js';
import type { LastRun, RunResult } from '../queue/job-data.js';
import type { RunContext } from './context.js';
import type { DeliveryReport } from './delivery/reply.js';
import type { RunRecord, TimelineEntry } from './record.js';
import type { JournalEntry } from '../session/journal.js';
import type { InboundMessage } from '../channels/types.js';
import { recordTranscript } from './record.js';

const NO_USAGE = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/** A job that did not run a turn: another run holds the session, or nothing waits in it. */
export function skippedResult(ctx: RunContext, reason: 'session_busy' | 'inbox_empty'): RunResult {
  return {
    runId: ctx.runId,
    session: ctx.session,
    state: 'skipped',
    reason,
    messageIds: [],
    steps: 0,
    modelCalls: 0,
    toolCalls: 0,
    usage: NO_USAGE,
    delivered: [],
    ms: Date.now() - ctx.started,
  };
}

/** The run's result from the loop's outcome and, once delivered, the delivery's report. */
export function resultOf(ctx: RunContext, outcome: RunOutcome, messageIds: string[], agent: string, report?: DeliveryReport): RunResult {
  return {
    runId: ctx.runId,
    session: ctx.session,
    agent,
    state: outcome.state,
    messageIds,
    steps: outcome.steps,
    modelCalls: outcome.modelCalls,
    toolCalls: outcome.toolCalls,
    usage: outcome.usage,
    delivered: report?.posted ?? [],
    ms: Date.now() - ctx.started,
    ...(outcome.reason && { reason: outcome.reason }),
    ...(outcome.detail && { detail: outcome.detail }),
    ...(report?.undeliverable !== undefined && { undeliverable: report.undeliverable }),
  };
}

/** The session's last run, as /status reads it. */
export function lastRunOf(result: RunResult): LastRun {
  const { runId, state, reason, messageIds, steps, toolCalls, agent } = result;
  return { runId, state, ...(reason && { reason }), messageIds, steps, toolCalls, ...(agent !== undefined && { agent }), at: Date.now() };
}

/** The run record: the result with the messages, transcript, timeline and journal that led to it. */
export function recordOf(
  ctx: RunContext,
  result: RunResult,
  outcome: RunOutcome,
  seen: { messages: InboundMessage[]; timeline: TimelineEntry[]; journal: JournalEntry[] },
): RunRecord {
  const { ms: _ms, messageIds: _ids, state: _state, ...rest } = result;
  return {
    ...rest,
    v: 1,
    jobId: ctx.jobId,
    startedAt: ctx.started,
    endedAt: ctx.started + result.ms,
    state: outcome.state,
    messages: seen.messages,
    transcript: recordTranscript(outcome.transcript),
    timeline: seen.timeline,
    journal: seen.journal,
  };
}
