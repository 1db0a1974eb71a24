import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics/metrics.js';
import { countedOutbound } from '../../src/metrics/counted-outbound.js';
import type { AgentEvent, FailureReason, RunOutcome, TerminalState } from '../../src/agent/types.js';
import type { InboundMessage, OutboundAdapter, PostKind } from '../../src/channels/types.js';

/**
 * Security (low): a label value that comes from outside (a tool name the model chose, a field of
 * a message, a reason read back from Redis) must not mint a new Prometheus series per value: the
 * model could invent a thousand tool names and grow /metrics (and Prometheus) without bound.
 * Every label takes only known values; anything else is counted as `unknown`.
 */

const N = 1_000;
const invented = (i: number) => `evil_tool_${i}_${'x'.repeat(i % 7)}`;

function toolEnd(name: string, ok = true): AgentEvent {
  return { type: 'tool_end', step: 1, callId: `c-${name}`, name, ok, summary: '', ms: 1 };
}

/** The series (label sets) a metric of the registry has now. */
async function series(metrics: Metrics, name: string): Promise<Record<string, string | number>[]> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  return (await metric.get()).values.map((v) => v.labels as Record<string, string | number>);
}

const outcome = (state: string, reason?: string): Pick<RunOutcome, 'state' | 'reason' | 'modelCalls' | 'usage'> => ({
  state: state as TerminalState,
  ...(reason !== undefined && { reason: reason as FailureReason }),
  modelCalls: 1,
  usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
});

describe('metric labels come only from known values', () => {
  it('switchboard_tool_calls_total: 1,000 invented tool names make no new series; a tool offered in the run keeps its name', async () => {
    const metrics = new Metrics();
    const offered = [{ name: 'read_file' }, { name: 'mcp_tracker_search' }];
    for (let i = 0; i < N; i++) metrics.onAgentEvent(toolEnd(invented(i), i % 2 === 0), offered);
    metrics.onAgentEvent(toolEnd('read_file'), offered);
    metrics.onAgentEvent(toolEnd('mcp_tracker_search', false), offered);
    // A real tool's name, but not one offered in this run: unknown too.
    metrics.onAgentEvent(toolEnd('run_command'), offered);
    // A replayed call (a resumed run) is not counted again.
    metrics.onAgentEvent({ ...toolEnd('read_file'), replayed: true } as AgentEvent, offered);

    const values = await series(metrics, 'switchboard_tool_calls_total');
    expect(values.length).toBeLessThanOrEqual(4);
    expect(new Set(values.map((l) => l.tool))).toEqual(new Set(['unknown', 'read_file', 'mcp_tracker_search']));
    const all = (await metrics.registry.getSingleMetric('switchboard_tool_calls_total')!.get()).values;
    expect(all.find((v) => v.labels.tool === 'read_file' && v.labels.outcome === 'ok')?.value).toBe(1);
    expect(all.find((v) => v.labels.tool === 'mcp_tracker_search' && v.labels.outcome === 'error')?.value).toBe(1);
    expect(all.filter((v) => v.labels.tool === 'unknown').reduce((n, v) => n + v.value, 0)).toBe(N + 1);
  });

  it('platform, command, reason, state, outcome, kind and operation: invented values are counted as unknown, known ones kept', async () => {
    const metrics = new Metrics();
    for (let i = 0; i < N; i++) {
      const odd = `odd-${i}`;
      metrics.inbound.inc({ platform: odd });
      metrics.deduplicated.inc({ platform: odd });
      metrics.commands.inc({ platform: odd, command: odd });
      metrics.refusals.inc({ platform: odd, reason: odd });
      metrics.undeliverable.inc({ platform: odd });
      metrics.approvals.inc({ outcome: odd });
      metrics.scheduleFirings.inc({ outcome: odd });
      metrics.historySummaries.inc({ outcome: odd });
      metrics.deliveries.inc({ platform: odd, kind: odd });
      metrics.deliveryErrors.inc({ platform: odd, operation: odd });
      metrics.tokens.inc({ kind: odd }, 1);
      metrics.onRunEnded(outcome(odd, odd), 1, odd);
    }
    // Known values stay as they are.
    metrics.inbound.inc({ platform: 'telegram' });
    metrics.commands.inc({ platform: 'slack', command: 'status' });
    metrics.commands.inc({ platform: 'slack', command: 'unknown' });
    metrics.refusals.inc({ platform: 'discord', reason: 'rate_limited' });
    metrics.approvals.inc({ outcome: 'approved' });
    metrics.scheduleFirings.inc({ outcome: 'queue_full' });
    metrics.historySummaries.inc({ outcome: 'skipped' });
    metrics.onRunEnded(outcome('failed', 'step_limit'), 1, 'default');
    metrics.knowAgents(['support']);
    metrics.onRunEnded(outcome('completed'), 1, 'support');

    const json = await metrics.registry.getMetricsAsJSON();
    for (const metric of json) {
      // Histograms have a series per bucket: count label sets without `le`.
      const sets = new Set(metric.values.map((v) => JSON.stringify(Object.entries(v.labels).filter(([k]) => k !== 'le'))));
      expect({ metric: metric.name, series: sets.size <= 20 }).toEqual({ metric: metric.name, series: true });
      for (const v of metric.values) for (const [k, value] of Object.entries(v.labels)) if (k !== 'le') expect(String(value)).not.toMatch(/^odd-/);
    }
    expect(await series(metrics, 'switchboard_inbound_events_total')).toEqual(expect.arrayContaining([{ platform: 'unknown' }, { platform: 'telegram' }]));
    expect(await series(metrics, 'switchboard_commands_total')).toEqual(
      expect.arrayContaining([
        { platform: 'slack', command: 'status' },
        { platform: 'slack', command: 'unknown' },
        { platform: 'unknown', command: 'unknown' },
      ]),
    );
    expect(await series(metrics, 'switchboard_refusals_total')).toEqual(
      expect.arrayContaining([
        { platform: 'discord', reason: 'rate_limited' },
        { platform: 'unknown', reason: 'unknown' },
      ]),
    );
    expect(await series(metrics, 'switchboard_approvals_total')).toEqual(expect.arrayContaining([{ outcome: 'approved' }, { outcome: 'unknown' }]));
    expect(await series(metrics, 'switchboard_schedule_firings_total')).toEqual(expect.arrayContaining([{ outcome: 'queue_full' }]));
    expect(await series(metrics, 'switchboard_history_summaries_total')).toEqual(expect.arrayContaining([{ outcome: 'skipped' }]));
    expect(await series(metrics, 'switchboard_runs_total')).toEqual(
      expect.arrayContaining([
        { state: 'failed', reason: 'step_limit', agent: 'default' },
        { state: 'completed', reason: 'none', agent: 'support' },
        { state: 'unknown', reason: 'unknown', agent: 'unknown' },
      ]),
    );
  });

  it('deliveries through countedOutbound: an adapter with an odd platform and odd post kinds stays bounded', async () => {
    const metrics = new Metrics();
    const to = { platform: 'x' } as InboundMessage;
    for (let i = 0; i < 200; i++) {
      const out = {
        platform: `plat-${i}`,
        editIntervalMs: 0,
        typingIntervalMs: 0,
        post: async () => ['1'],
        edit: async () => undefined,
      } as unknown as OutboundAdapter;
      const counted = countedOutbound(out, metrics);
      await counted.post(to, 'hi', `kind-${i}` as PostKind);
      await counted.edit(to, '1', 'hi');
    }
    const real = countedOutbound({ platform: 'telegram', post: async () => ['1'], edit: async () => undefined } as unknown as OutboundAdapter, metrics);
    await real.post(to, 'hi', 'answer');
    const values = await series(metrics, 'switchboard_deliveries_total');
    expect(values.length).toBeLessThanOrEqual(3);
    expect(values).toEqual(
      expect.arrayContaining([
        { platform: 'unknown', kind: 'unknown' },
        { platform: 'unknown', kind: 'edit' },
        { platform: 'telegram', kind: 'answer' },
      ]),
    );
  });

  it('switchboard_queue_jobs: only BullMQ job states', async () => {
    const metrics = new Metrics();
    metrics.queueDepth(async () => ({ waiting: 2, active: 1, ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`state-${i}`, 1])) }));
    const values = await series(metrics, 'switchboard_queue_jobs');
    expect(values.map((l) => l.state).sort()).toEqual(['active', 'unknown', 'waiting']);
    const all = (await metrics.registry.getSingleMetric('switchboard_queue_jobs')!.get()).values;
    expect(all.find((v) => v.labels.state === 'unknown')?.value).toBe(50);
  });
});
