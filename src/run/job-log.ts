import type { AgentEvent } from '../agent/types.js';
import { clip } from '../lib/text.js';

const LINE_CHARS = 300;

/** One job-log line per agent event: the narration and each tool call with its outcome, for the dashboard. */
export function jobLogLine(event: AgentEvent): string | null {
  const line = eventLine(event);
  return line !== null && 'replayed' in event && event.replayed ? `(from the journal) ${line}` : line;
}

function eventLine(event: AgentEvent): string | null {
  switch (event.type) {
    // Streamed text arrives many times a second: the response it ends in has its own line.
    case 'answer_text':
      return null;
    case 'model_call':
      return `step ${event.step}: model call`;
    case 'narration':
      return `assistant: ${clip(event.text, LINE_CHARS)}`;
    case 'tool_start':
      return `tool ${event.name} ${clip(event.args, 200)}`;
    case 'tool_end':
      return `tool ${event.name} ${event.ok ? 'ok' : 'error'} in ${event.ms} ms: ${clip(event.summary, LINE_CHARS)}`;
    case 'model_retry':
      return `model retry ${event.attempt} in ${event.delayMs} ms: ${clip(event.error, LINE_CHARS)}`;
    case 'nudge':
      return event.reason === 'repeat'
        ? `step ${event.step}: repeated response; nudged the model to change strategy`
        : `step ${event.step}: empty answer; nudged the model to answer`;
    case 'final':
      return `final answer: ${clip(event.text, LINE_CHARS)}`;
    case 'end': {
      const o = event.outcome;
      return `run ${o.state}${o.reason ? ` (${o.reason})` : ''}: ${o.steps} steps, ${o.toolCalls} tool calls, ${o.usage.totalTokens} tokens`;
    }
  }
}
