import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type HistogramConfiguration,
  type LabelValues,
} from 'prom-client';
import type { AgentEvent, FailureReason, RunOutcome, TerminalState } from '../agent/types.js';
import { IMPLICIT_AGENT } from '../profiles/roster.js';
import { COMMANDS } from '../channels/commands.js';
import type { ApprovalOutcome, PostKind, RefusalReason } from '../channels/types.js';

/** Run and wait times span milliseconds (a cached answer) to many minutes (a long agent run). */
const SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * Label values come only from known values: every series is a combination of values listed
 * here. A value from outside (a tool name the model chose, a message's platform field, a reason
 * read back from a job) that is not one of them is counted as `unknown`, so nothing a model or a
 * payload writes can mint new series (an unbounded /metrics, and Prometheus with it). Every
 * counter and histogram below checks its labels in `inc` / `observe` itself, so a new call site
 * cannot go around it.
 */
export const UNKNOWN = 'unknown';

/** Each value of the union `T`, checked when compiled: a member added to the union and not here fails the build (it would count as unknown). */
function every<T extends string>() {
  return <const V extends readonly T[]>(
    values: V & ([Exclude<T, V[number]>] extends [never] ? unknown : { missing: Exclude<T, V[number]> }),
  ): readonly string[] => values;
}

/** The channels there are (src/channels/registry.ts, and the terminal chat). */
const PLATFORMS = ['telegram', 'slack', 'discord', 'terminal'];
const STATES = every<TerminalState>()(['completed', 'failed', 'cancelled']);
const RUN_REASONS = [
  ...every<FailureReason>()([
    'step_limit',
    'context_budget',
    'model_error',
    'incomplete_turn',
    'empty_answer',
    'cancelled',
    'worker_crashed',
    'run_timeout',
    'budget',
  ]),
  'none',
];
const REFUSAL_REASONS = [...every<RefusalReason>()(['pairing', 'not_allowed', 'dm_disabled', 'channel_not_allowed', 'rate_limited']), 'queue_full', 'budget'];
const COMMAND_NAMES = [...Object.keys(COMMANDS), UNKNOWN];
const APPROVAL_OUTCOMES = every<ApprovalOutcome['decision']>()(['approved', 'denied', 'expired', 'cancelled']);
/** FiringMetricOutcome (intake/schedule-firing.ts, which imports this module: listed by hand). */
const FIRING_OUTCOMES = ['completed', 'failed', 'cancelled', 'undeliverable', 'duplicate', 'queue_full', 'deleted', 'paused', 'refused'];
const SUMMARY_OUTCOMES = ['ok', 'failed', 'skipped'];
const DELIVERY_KINDS = [...every<PostKind>()(['status', 'answer', 'notice']), 'edit'];
const OPERATIONS = ['post', 'edit'];
const TOKEN_KINDS = ['prompt', 'completion'];
const TOOL_OUTCOMES = ['ok', 'error'];
/** BullMQ's job states (getJobCounts). */
const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'paused', 'completed', 'failed'];
/**
 * A tool name is a series only when it was offered in the run (onAgentEvent checks that); this
 * shape check is the counter's own backstop (the model API's function-name rule).
 */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

type Bound = readonly string[] | RegExp;
type Bounds<T extends string> = Record<T, Bound>;

function knownValue(bound: Bound | undefined, value: unknown): string {
  const v = String(value);
  if (bound === undefined) return UNKNOWN;
  return (Array.isArray(bound) ? bound.includes(v) : (bound as RegExp).test(v)) ? v : UNKNOWN;
}

function knownLabels<T extends string>(bounds: Bounds<T>, labels: LabelValues<T>): LabelValues<T> {
  const out: Partial<Record<T, string>> = {};
  for (const [name, value] of Object.entries(labels)) out[name as T] = knownValue(bounds[name as T], value);
  return out as LabelValues<T>;
}

/** A counter whose label values are checked against `labels` on every inc (prom-client sets `inc` on the instance, so it is wrapped there). */
function knownCounter<T extends string>(config: Omit<CounterConfiguration<T>, 'labelNames'> & { labels: Bounds<T> }): Counter<T> {
  const { labels: bounds, ...rest } = config;
  const counter = new Counter<T>({ ...rest, labelNames: Object.keys(bounds) as T[] });
  const inc = counter.inc.bind(counter) as (labels?: LabelValues<T> | number, value?: number) => void;
  counter.inc = ((labels?: LabelValues<T> | number, value?: number) =>
    labels !== null && typeof labels === 'object' ? inc(knownLabels(bounds, labels), value) : inc(labels)) as Counter<T>['inc'];
  return counter;
}

function knownHistogram<T extends string>(config: Omit<HistogramConfiguration<T>, 'labelNames'> & { labels: Bounds<T> }): Histogram<T> {
  const { labels: bounds, ...rest } = config;
  const histogram = new Histogram<T>({ ...rest, labelNames: Object.keys(bounds) as T[] });
  const observe = histogram.observe.bind(histogram) as (labels: LabelValues<T> | number, value?: number) => void;
  histogram.observe = ((labels: LabelValues<T> | number, value?: number) =>
    labels !== null && typeof labels === 'object' ? observe(knownLabels(bounds, labels), value) : observe(labels)) as Histogram<T>['observe'];
  return histogram;
}

/**
 * This process's Prometheus metrics. Every process (gateway, worker, or both in one) serves its
 * own at /metrics; Prometheus sums across processes. Queue depth is read from Redis on scrape.
 * Label values are bounded (see UNKNOWN above).
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly registers = [this.registry];
  /** The agents a run may be counted under: the roster's names (knowAgents), so the label stays bounded by the config. */
  private readonly agentNames: string[] = [IMPLICIT_AGENT];
  readonly inbound = knownCounter({
    name: 'switchboard_inbound_events_total',
    help: 'Inbound messages accepted into a session inbox, by platform',
    labels: { platform: PLATFORMS },
    registers: this.registers,
  });
  readonly deduplicated = knownCounter({
    name: 'switchboard_deduplicated_events_total',
    help: 'Redelivered platform events dropped as duplicates, by platform',
    labels: { platform: PLATFORMS },
    registers: this.registers,
  });
  readonly commands = knownCounter({
    name: 'switchboard_commands_total',
    help: 'Chat commands answered at once, by command',
    labels: { platform: PLATFORMS, command: COMMAND_NAMES },
    registers: this.registers,
  });
  readonly runs = knownCounter({
    name: 'switchboard_runs_total',
    help: 'Agent runs by terminal state, reason and agent (AGENTS_CONFIG; "default" without it)',
    labels: { state: STATES, reason: RUN_REASONS, agent: this.agentNames },
    registers: this.registers,
  });
  readonly runDuration = knownHistogram({
    name: 'switchboard_run_duration_seconds',
    help: 'From claim to reply delivered',
    labels: { state: STATES },
    buckets: SECONDS_BUCKETS,
    registers: this.registers,
  });
  readonly queueWait = new Histogram({
    name: 'switchboard_queue_wait_seconds',
    help: 'From the first message of a turn arriving to its run starting',
    buckets: SECONDS_BUCKETS,
    registers: this.registers,
  });
  readonly modelCalls = new Counter({ name: 'switchboard_model_calls_total', help: 'Model requests sent (retries included)', registers: this.registers });
  readonly tokens = knownCounter({
    name: 'switchboard_model_tokens_total',
    help: 'Model tokens by kind',
    labels: { kind: TOKEN_KINDS },
    registers: this.registers,
  });
  /** By tool: counted only through onAgentEvent, which knows the tools offered in the run. */
  private readonly toolCalls = knownCounter({
    name: 'switchboard_tool_calls_total',
    help: 'Tool calls by tool (one offered in the run, else unknown) and outcome',
    labels: { tool: TOOL_NAME, outcome: TOOL_OUTCOMES },
    registers: this.registers,
  });
  readonly deliveries = knownCounter({
    name: 'switchboard_deliveries_total',
    help: 'Messages posted or edited on a platform, by kind',
    labels: { platform: PLATFORMS, kind: DELIVERY_KINDS },
    registers: this.registers,
  });
  readonly undeliverable = knownCounter({
    name: 'switchboard_undeliverable_replies_total',
    help: 'Replies the platform refused for good (chat gone, bot blocked or removed), settled without delivery',
    labels: { platform: PLATFORMS },
    registers: this.registers,
  });
  readonly unreadable = new Counter({
    name: 'switchboard_unreadable_messages_total',
    help: 'Inbox entries no run could read, moved aside so their conversation goes on',
    registers: this.registers,
  });
  readonly resumes = new Counter({
    name: 'switchboard_resumed_turns_total',
    help: 'Turns a run took over from an earlier run of it (worker died, froze or stopped), resumed from the journal',
    registers: this.registers,
  });
  readonly approvals = knownCounter({
    name: 'switchboard_approvals_total',
    help: 'Tool calls that waited for approval, by outcome (approved, denied, expired, cancelled)',
    labels: { outcome: APPROVAL_OUTCOMES },
    registers: this.registers,
  });
  readonly refusals = knownCounter({
    name: 'switchboard_refusals_total',
    help: 'Messages refused or runs stopped by access control and limits, by platform and reason (pairing, not_allowed, dm_disabled, channel_not_allowed, rate_limited, queue_full, budget)',
    labels: { platform: PLATFORMS, reason: REFUSAL_REASONS },
    registers: this.registers,
  });
  readonly scheduleFirings = knownCounter({
    name: 'switchboard_schedule_firings_total',
    help: 'Schedule firings by outcome: how their turn ended (completed, failed, cancelled, undeliverable) or why none ran (queue_full, paused, deleted, duplicate: a firing already queued)',
    labels: { outcome: FIRING_OUTCOMES },
    registers: this.registers,
  });
  readonly historySummaries = knownCounter({
    name: 'switchboard_history_summaries_total',
    help: 'Older history summarised before a turn (AGENT_HISTORY_TOKENS), by outcome: ok, failed (the turn went on with the older turns left out), skipped (no token budget left)',
    labels: { outcome: SUMMARY_OUTCOMES },
    registers: this.registers,
  });
  readonly deliveryErrors = knownCounter({
    name: 'switchboard_delivery_errors_total',
    help: 'Platform calls that failed, by operation',
    labels: { platform: PLATFORMS, operation: OPERATIONS },
    registers: this.registers,
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'switchboard_process_' });
  }

  /** Queue depth by state, read from Redis when scraped (a state BullMQ does not have is summed under unknown). */
  queueDepth(read: () => Promise<Record<string, number>>): void {
    new Gauge({
      name: 'switchboard_queue_jobs',
      help: 'Run jobs in the queue by state',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const byState = new Map<string, number>();
        for (const [state, count] of Object.entries(await read())) {
          const known = knownValue(JOB_STATES, state);
          byState.set(known, (byState.get(known) ?? 0) + count);
        }
        for (const [state, count] of byState) this.set({ state }, count);
      },
    });
  }

  /**
   * Per-event counters of one run. `offered`: the tools offered to the model in this run (built-in
   * and MCP, as known when it started): a tool name the model made up, or one not offered here,
   * is counted as unknown.
   */
  onAgentEvent(event: AgentEvent, offered: readonly { readonly name: string }[]): void {
    if (event.type !== 'tool_end' || event.replayed) return;
    const tool = offered.some((t) => t.name === event.name) ? event.name : UNKNOWN;
    this.toolCalls.inc({ tool, outcome: event.ok ? 'ok' : 'error' });
  }

  /** The roster's agent names (AGENTS_CONFIG): runs are counted under them; any other name is `unknown`. */
  knowAgents(names: readonly string[]): void {
    for (const name of names) if (!this.agentNames.includes(name)) this.agentNames.push(name);
  }

  onRunEnded(outcome: Pick<RunOutcome, 'state' | 'reason' | 'modelCalls' | 'usage'>, seconds: number, agent: string): void {
    this.runs.inc({ state: outcome.state, reason: outcome.reason ?? 'none', agent });
    this.runDuration.observe({ state: outcome.state }, seconds);
    this.modelCalls.inc(outcome.modelCalls);
    this.tokens.inc({ kind: 'prompt' }, outcome.usage.promptTokens);
    this.tokens.inc({ kind: 'completion' }, outcome.usage.completionTokens);
  }
}
