import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AgentEvent, RunOutcome } from '../agent/types.js';

/** Run and wait times span milliseconds (a cached answer) to many minutes (a long agent run). */
const SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * This process's Prometheus metrics. Every process (gateway, worker, or both in one) serves its
 * own at /metrics; Prometheus sums across processes. Queue depth is read from Redis on scrape.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly inbound = new Counter({ name: 'switchboard_inbound_events_total', help: 'Inbound messages accepted into a session inbox, by platform', labelNames: ['platform'], registers: [this.registry] });
  readonly deduplicated = new Counter({ name: 'switchboard_deduplicated_events_total', help: 'Redelivered platform events dropped as duplicates, by platform', labelNames: ['platform'], registers: [this.registry] });
  readonly commands = new Counter({ name: 'switchboard_commands_total', help: 'Chat commands answered at once, by command', labelNames: ['platform', 'command'], registers: [this.registry] });
  readonly runs = new Counter({ name: 'switchboard_runs_total', help: 'Agent runs by terminal state and reason', labelNames: ['state', 'reason'], registers: [this.registry] });
  readonly runDuration = new Histogram({ name: 'switchboard_run_duration_seconds', help: 'From claim to reply delivered', labelNames: ['state'], buckets: SECONDS_BUCKETS, registers: [this.registry] });
  readonly queueWait = new Histogram({ name: 'switchboard_queue_wait_seconds', help: 'From the first message of a turn arriving to its run starting', buckets: SECONDS_BUCKETS, registers: [this.registry] });
  readonly modelCalls = new Counter({ name: 'switchboard_model_calls_total', help: 'Model requests sent (retries included)', registers: [this.registry] });
  readonly tokens = new Counter({ name: 'switchboard_model_tokens_total', help: 'Model tokens by kind', labelNames: ['kind'], registers: [this.registry] });
  readonly toolCalls = new Counter({ name: 'switchboard_tool_calls_total', help: 'Tool calls by tool and outcome', labelNames: ['tool', 'outcome'], registers: [this.registry] });
  readonly deliveries = new Counter({ name: 'switchboard_deliveries_total', help: 'Messages posted or edited on a platform, by kind', labelNames: ['platform', 'kind'], registers: [this.registry] });
  readonly undeliverable = new Counter({ name: 'switchboard_undeliverable_replies_total', help: 'Replies the platform refused for good (chat gone, bot blocked or removed), settled without delivery', labelNames: ['platform'], registers: [this.registry] });
  readonly unreadable = new Counter({ name: 'switchboard_unreadable_messages_total', help: 'Inbox entries no run could read, moved aside so their conversation goes on', registers: [this.registry] });
  readonly resumes = new Counter({ name: 'switchboard_resumed_turns_total', help: 'Turns a run took over from an earlier run of it (worker died, froze or stopped), resumed from the journal', registers: [this.registry] });
  readonly approvals = new Counter({ name: 'switchboard_approvals_total', help: 'Tool calls that waited for approval, by outcome (approved, denied, expired, cancelled)', labelNames: ['outcome'], registers: [this.registry] });
  readonly refusals = new Counter({ name: 'switchboard_refusals_total', help: 'Messages refused or runs stopped by access control and limits, by platform and reason (pairing, not_allowed, dm_disabled, channel_not_allowed, rate_limited, queue_full, budget)', labelNames: ['platform', 'reason'], registers: [this.registry] });
  readonly scheduleFirings = new Counter({ name: 'switchboard_schedule_firings_total', help: 'Schedule firings by outcome: how their turn ended (completed, failed, cancelled, undeliverable) or why none ran (queue_full, paused, deleted, duplicate: a firing already queued)', labelNames: ['outcome'], registers: [this.registry] });
  readonly historySummaries = new Counter({ name: 'switchboard_history_summaries_total', help: 'Older history summarised before a turn (AGENT_HISTORY_TOKENS), by outcome: ok, failed (the turn went on with the older turns left out), skipped (no token budget left)', labelNames: ['outcome'], registers: [this.registry] });
  readonly deliveryErrors = new Counter({ name: 'switchboard_delivery_errors_total', help: 'Platform calls that failed, by operation', labelNames: ['platform', 'operation'], registers: [this.registry] });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'switchboard_process_' });
  }

  /** Queue depth by state, read from Redis when scraped. */
  queueDepth(read: () => Promise<Record<string, number>>): void {
    new Gauge({
      name: 'switchboard_queue_jobs',
      help: 'Run jobs in the queue by state',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        for (const [state, count] of Object.entries(await read())) this.set({ state }, count);
      },
    });
  }

  /** Per-event counters of one run. */
  onAgentEvent(event: AgentEvent): void {
    if (event.type === 'tool_end' && !event.replayed) this.toolCalls.inc({ tool: event.name, outcome: event.ok ? 'ok' : 'error' });
  }

  onRunEnded(outcome: Pick<RunOutcome, 'state' | 'reason' | 'modelCalls' | 'usage'>, seconds: number): void {
    this.runs.inc({ state: outcome.state, reason: outcome.reason ?? 'none' });
    this.runDuration.observe({ state: outcome.state }, seconds);
    this.modelCalls.inc(outcome.modelCalls);
    this.tokens.inc({ kind: 'prompt' }, outcome.usage.promptTokens);
    this.tokens.inc({ kind: 'completion' }, outcome.usage.completionTokens);
  }
}
