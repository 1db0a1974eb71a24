import type { AgentEvent } from '../agent/types.js';
import type { Tool } from '../tools/types.js';
import type { RunContext } from './context.js';
import { jobLogLine } from './job-log.js';
import { timelineEntry, type TimelineEntry } from './record.js';

export interface TurnEvents {
  onEvent(event: AgentEvent): void;
}

/**
 * Where each of the loop's events goes: the chat (`show`: the live answer or the status line),
 * the metrics, the run's timeline, and the job's log and progress for the dashboard (the run's
 * trace writes them behind the loop).
 */
export function turnEvents(ctx: RunContext, tools: readonly Tool[], timeline: TimelineEntry[], show: (event: AgentEvent) => unknown): TurnEvents {
  return {
    onEvent(event) {
      show(event);
      ctx.deps.metrics?.onAgentEvent(event, tools);
      const entry = timelineEntry(event, Date.now() - ctx.started);
      if (entry) timeline.push(entry);
      const line = jobLogLine(event);
      if (line) ctx.trace.line(line);
      if (event.type === 'model_call' || event.type === 'tool_start') {
        ctx.trace.progress({ step: event.step, phase: event.type === 'model_call' ? 'model' : `tool ${event.name}` });
      }
    },
  };
}
