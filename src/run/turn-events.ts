import type { AgentEvent } from '../agent/types.js';
import type { Tool } from '../tools/types.js';
import type { RunContext } from './context.js';
import { jobLogLine } from './job-log.js';
import { timelineEntry, type TimelineEntry } from './record.js';

export interface TurnEvents {
  onEvent(event: AgentEvent): void;
  /** The job-log lines and progress written so far (in order, one after another). */
  jobLogs(): Promise<void>;
}

/**
 * Where each of the loop's events goes: the chat (`show`: the live answer or the status line),
 * the metrics, the run's timeline, and the job's log and progress for the dashboard. Job-log
 * writes are chained so they land in order without holding the loop up; one that fails is logged.
 */
export function turnEvents(ctx: RunContext, tools: readonly Tool[], timeline: TimelineEntry[], show: (event: AgentEvent) => unknown): TurnEvents {
  let logs = Promise.resolve();
  return {
    onEvent(event) {
      show(event);
      ctx.deps.metrics?.onAgentEvent(event, tools);
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
        .catch((err: unknown) => ctx.log.warn({ err }, 'job log write failed'));
    },
    jobLogs: () => logs,
  };
}
