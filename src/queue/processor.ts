import { UnrecoverableError, type Job } from 'bullmq';
import type { AgentLimits, ChatMessage, ModelClient, RunOutcome } from '../agent/types.js';
import { runAgent } from '../agent/loop.js';
import { boundHistory, compactTurn } from '../agent/history.js';
import { buildTools } from '../tools/index.js';
import { Workspace } from '../tools/workspace.js';
import type { OutboundAdapter } from '../channels/types.js';
import { ProgressReporter } from '../delivery/progress.js';
import { deliverReply, type OutboxRecord } from '../delivery/reply.js';
import { honestLine } from '../delivery/honest-line.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { ActiveRuns } from './active-runs.js';
import type { SessionKeys } from './keys.js';
import type { ScriptedRedis } from './scripts.js';
import { addRunJob, type RunQueue } from './run-queue.js';
import { forDisplay, jobName, type RunJobData, type RunResult } from './job-data.js';
import { jobLogLine } from './run-log.js';
import { saveAttachments } from './attachments.js';
import { recordTranscript, runViewPath, timelineEntry, type RunStore, type TimelineEntry } from './run-record.js';
import { selectTurn, toUserMessage, type ClaimedMessage, type Turn } from './turn.js';

export interface RunDeps {
  redis: ScriptedRedis;
  queue: RunQueue;
  keys: SessionKeys;
  model: ModelClient;
  system: string;
  limits: AgentLimits;
  historyTokens: number;
  foldMax: number;
  workspaceRoot: string;
  attachmentMaxBytes: number;
  outbound: (platform: string) => OutboundAdapter;
  active: ActiveRuns;
  log: Logger;
  metrics?: Metrics;
  runs: RunStore;
}

/** Turns kept in a session's history list (the token budget picks from these). */
const HISTORY_MAX_TURNS = 200;
/** Tool results longer than this are cut when the turn is stored in history. */
const HISTORY_TOOL_RESULT_CHARS = 2_000;

export const RESET_ANSWER = 'Fresh start: I have forgotten this conversation. Files in the workspace are kept.';

/** The run refused to go on because another process now holds its job or session. */
export class FencedError extends Error {
  override readonly name = 'FencedError';
}

type Processor = (job: Job<RunJobData, RunResult>, token: string | undefined, signal?: AbortSignal) => Promise<RunResult>;

/**
 * One job = one agent run of one session: claim the inbox head (fenced), run the loop with live
 * progress, commit the turn and the reply in one fenced script, deliver the reply, hand over.
 * Only a completed run completes the job; any other terminal state fails it with its reason.
 */
export function createProcessor(deps: RunDeps): Processor {
  return async (job, token, signal) => {
    if (!token || job.id === undefined) throw new Error('a run needs a job id and a lock token');
    const started = Date.now();
    const session = job.data.session;
    const jobId = job.id;
    const runId = `${jobId}.${job.attemptsStarted}`;
    const log = deps.log.child({ platform: session.slice(0, session.indexOf(':')), session, jobId, runId });
    const k = deps.keys;
    const lock = k.jobLock(jobId);
    const owner = k.owner(session);
    const base = { runId, session, messageIds: [], steps: 0, modelCalls: 0, toolCalls: 0, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, delivered: [] };

    const claim = await deps.redis.sbClaim(lock, owner, k.inbox(session), k.claims(session), k.outbox(session), token, jobId, k.jobBase, deps.foldMax);
    const status = Number(claim[0]);
    if (status === -1) throw new FencedError('lost the job lock before the run started');
    if (status === -2) {
      await job.log(`session is held by run ${String(claim[1])}; this job leaves the inbox to it`);
      log.info({ holder: claim[1] }, 'session busy, job skipped');
      return { ...base, state: 'skipped', reason: 'session_busy', ms: Date.now() - started };
    }
    if (status === 0) return { ...base, state: 'skipped', reason: 'inbox_empty', ms: Date.now() - started };

    const pending = String(claim[1]);
    if (pending) await deliverPending(deps, pending, { lock, owner, token, jobId, session }, log);

    const claimed: ClaimedMessage[] = [];
    for (let i = 2; i < claim.length; i += 2) {
      const raw = String(claim[i + 1]);
      claimed.push({ claims: Number(claim[i]), raw, message: JSON.parse(raw) });
    }
    if (claimed.length === 0) {
      await deps.redis.sbSettle(lock, owner, k.outbox(session), token, jobId, '', '1');
      return { ...base, state: 'skipped', reason: 'inbox_empty', ms: Date.now() - started };
    }

    const turn = selectTurn(claimed);
    const messages = turn.taken.map((c) => c.message);
    deps.metrics?.queueWait.observe(Math.max(0, started - messages[0]!.receivedAt) / 1000);
    // Independent round trips go out together: the history read and the job's data and log.
    const storedHistory = deps.redis.lrange(k.history(session), 0, -1);
    await Promise.all([
      job.updateData({ ...job.data, messages: messages.map(forDisplay), runId }),
      job.log(`run ${runId} takes ${messages.length} message(s): ${messages.map((m) => m.id).join(', ')}`),
    ]);
    log.info({ messages: messages.length, turn: turn.kind }, 'run started');

    const to = messages[messages.length - 1]!;
    const out = deps.outbound(to.platform);
    const { outcome, statusMessageId, timeline, jobLogs } = await executeTurn(deps, job, turn, session, storedHistory, out, log, signal);

    const record: OutboxRecord = {
      v: 1,
      runId,
      session,
      to,
      state: outcome.state,
      text: outcome.state === 'completed' ? outcome.answer! : honestLine(outcome.reason, { maxSteps: deps.limits.maxSteps }),
      messageIds: messages.map((m) => m.id),
      ...(outcome.reason && { reason: outcome.reason }),
      ...(statusMessageId !== undefined && { statusMessageId }),
    };
    const outboxJson = JSON.stringify(record);
    const last = JSON.stringify({ runId, state: outcome.state, reason: outcome.reason, at: Date.now(), messageIds: record.messageIds, steps: outcome.steps, toolCalls: outcome.toolCalls });
    const history = historyEntry(turn, outcome);
    const ids = turn.taken.map((c) => c.message.id);
    const raws = turn.taken.map((c) => c.raw);
    const left = await deps.redis.sbCommit(
      lock, owner, k.inbox(session), k.history(session), k.last(session), k.outbox(session), k.claims(session), k.pending,
      token, jobId, history.mode, history.entry, HISTORY_MAX_TURNS, last, outboxJson, session, ids.length, ...ids, ...raws,
    );
    if (left < 0) throw new FencedError(`commit refused (${left === -1 ? 'job lock lost' : left === -2 ? 'session taken over' : 'inbox head changed'})`);

    // The turn is committed (the commit was the fence: a worker that froze past its lock stops
    // there): from here a crash re-delivers the outbox, it never re-runs the turn.
    const delivered = await deliverReply(out, record, log);
    await Promise.all([
      deps.redis.sbSettle(lock, owner, k.outbox(session), token, jobId, outboxJson, '1'),
      left > 0 ? addRunJob(deps.queue, jobName(to), { v: 1, session }) : undefined,
    ]);

    const result: RunResult = {
      ...base,
      state: outcome.state,
      messageIds: record.messageIds,
      steps: outcome.steps,
      modelCalls: outcome.modelCalls,
      toolCalls: outcome.toolCalls,
      usage: outcome.usage,
      delivered,
      ms: Date.now() - started,
      ...(outcome.reason && { reason: outcome.reason }),
      ...(outcome.detail && { detail: outcome.detail }),
    };
    log.info({ state: result.state, reason: result.reason, steps: result.steps, toolCalls: result.toolCalls, tokens: result.usage.totalTokens, ms: result.ms }, 'run ended');
    deps.metrics?.onRunEnded(outcome, result.ms / 1000);
    // The narration's job-log lines were written while the run went on; the last ones finish here.
    await jobLogs;
    await Promise.all([
      deps.runs
        .save({
          v: 1, runId, jobId, session, startedAt: started, endedAt: Date.now(), state: outcome.state, messages: messages.map(forDisplay),
          transcript: recordTranscript(outcome.transcript), timeline, steps: outcome.steps, modelCalls: outcome.modelCalls,
          toolCalls: outcome.toolCalls, usage: outcome.usage, delivered,
          ...(outcome.reason && { reason: outcome.reason }), ...(outcome.detail && { detail: outcome.detail }),
        })
        .catch((err: unknown) => log.warn({ err }, 'run record not saved')),
      job.log(`run view: ${runViewPath(runId)}`),
    ]);
    if (outcome.state !== 'completed') {
      await job.log(`result ${JSON.stringify(result)}`);
      throw new UnrecoverableError(`${outcome.state}: ${outcome.reason}${outcome.detail ? ` — ${outcome.detail}` : ''}`);
    }
    return result;
  };
}

async function executeTurn(
  deps: RunDeps,
  job: Job<RunJobData, RunResult>,
  turn: Turn,
  session: string,
  storedHistory: Promise<string[]>,
  out: OutboundAdapter,
  log: Logger,
  signal: AbortSignal | undefined,
): Promise<{ outcome: RunOutcome; statusMessageId?: string; timeline: TimelineEntry[]; jobLogs: Promise<void> }> {
  const plainInput = turn.taken.map((c) => toUserMessage(c.message));
  const none = { steps: 0, modelCalls: 0, toolCalls: 0, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, transcript: plainInput };
  const timeline: TimelineEntry[] = [];
  const jobLogs = Promise.resolve();
  if (turn.kind === 'reset') return { outcome: { ...none, state: 'completed', answer: RESET_ANSWER }, timeline, jobLogs };
  if (turn.kind === 'crashed') return { outcome: { ...none, state: 'failed', reason: 'worker_crashed', detail: 'the message started too many runs that never finished' }, timeline, jobLogs };
  const started = Date.now();

  const controller = deps.active.register(session, job.id!);
  const runSignal = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
  const progress = new ProgressReporter(out, turn.taken[turn.taken.length - 1]!.message, log);
  let logs = Promise.resolve();
  try {
    const stored = await storedHistory;
    const history = boundHistory(stored.map((s) => JSON.parse(s) as ChatMessage[]), deps.historyTokens);
    const workspace = Workspace.forScope(deps.workspaceRoot, session);
    progress.start();
    const messages = turn.taken.map((c) => c.message);
    const saved = await saveAttachments(out, workspace, messages, deps.attachmentMaxBytes, runSignal, log);
    const input = messages.map((m) => toUserMessage(m, saved));
    const outcome = await runAgent({
      model: deps.model,
      tools: buildTools(workspace),
      system: deps.system,
      history,
      input,
      limits: deps.limits,
      signal: runSignal,
      onEvent: (event) => {
        progress.onEvent(event);
        deps.metrics?.onAgentEvent(event);
        const entry = timelineEntry(event, Date.now() - started);
        if (entry) timeline.push(entry);
        const line = jobLogLine(event);
        const step = 'step' in event ? event.step : undefined;
        logs = logs
          .then(async () => {
            if (line) await job.log(line);
            if (event.type === 'model_call' || event.type === 'tool_start') {
              await job.updateProgress({ step, phase: event.type === 'model_call' ? 'model' : `tool ${event.name}` });
            }
          })
          .catch((err: unknown) => log.warn({ err }, 'job log write failed'));
      },
    });
    if (controller.signal.aborted && controller.signal.reason === 'lock_lost') throw new FencedError('lost the job lock during the run');
    return { outcome, timeline, jobLogs: logs, ...(progress.statusMessageId !== undefined && { statusMessageId: progress.statusMessageId }) };
  } finally {
    await progress.stop();
    deps.active.unregister(session, job.id!);
  }
}

/** What the session's history keeps of a turn: the whole exchange when completed, else the request and a note. */
function historyEntry(turn: Turn, outcome: RunOutcome): { mode: 'append' | 'reset' | 'keep'; entry: string } {
  if (turn.kind === 'reset') return { mode: 'reset', entry: '' };
  if (outcome.state === 'completed') return { mode: 'append', entry: JSON.stringify(compactTurn(outcome.transcript, HISTORY_TOOL_RESULT_CHARS)) };
  const users = turn.taken.map((c) => toUserMessage(c.message));
  const note: ChatMessage = { role: 'assistant', content: `(No answer was given to this: the run ended ${outcome.state}, ${outcome.reason}.)` };
  return { mode: 'append', entry: JSON.stringify([...users, note]) };
}

/** A reply an earlier run committed but did not confirm delivered (its worker died): deliver it now. */
async function deliverPending(
  deps: RunDeps,
  raw: string,
  fence: { lock: string; owner: string; token: string; jobId: string; session: string },
  log: Logger,
): Promise<void> {
  const record = JSON.parse(raw) as OutboxRecord;
  log.warn({ pendingRun: record.runId }, 'delivering a reply an earlier run committed but did not confirm');
  await deliverReply(deps.outbound(record.to.platform), record, log);
  const settled = await deps.redis.sbSettle(fence.lock, fence.owner, deps.keys.outbox(fence.session), fence.token, fence.jobId, raw, '0');
  if (settled < 0) throw new FencedError('lost the session while delivering a pending reply');
}
