import type { AgentEvent } from '../agent/types.js';

const MAX_LINE = 300;

function clip(text: string): string {
  const one = text.trim().replace(/\s*\n\s*/g, ' ');
  return one.length > MAX_LINE ? `${one.slice(0, MAX_LINE - 1)}…` : one;
}

/**
 * What a user sees of an agent event while the run works: the model's own words before a tool
 * call, and one short line per tool. Internal details (arguments, tool output) never leak here.
 */
export function progressLine(event: AgentEvent): string | null {
  switch (event.type) {
    case 'narration':
      return event.text.trim() ? clip(event.text) : null;
    case 'tool_end':
      return `${event.ok ? '•' : '✗'} ${clip(event.summary)}`;
    case 'model_retry':
      return `• the model is busy; retrying in ${Math.max(1, Math.round(event.delayMs / 1000))} s`;
    default:
      return null;
  }
}
