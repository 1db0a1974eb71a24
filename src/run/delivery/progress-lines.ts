import type { AgentEvent } from '../../agent/types.js';
import { clip } from '../../lib/text.js';

const MAX_LINE = 300;

function oneLine(text: string): string {
  return clip(text.trim().replace(/\s*\n\s*/g, ' '), MAX_LINE);
}

/**
 * What a user sees of an agent event while the run works: the model's own words before a tool
 * call, and one short line per tool. Internal details (arguments, tool output) never leak here.
 */
export function progressLine(event: AgentEvent): string | null {
  switch (event.type) {
    case 'narration':
      return event.text.trim() ? oneLine(event.text) : null;
    case 'tool_end':
      return `${event.ok ? '•' : '✗'} ${oneLine(event.summary)}`;
    case 'model_retry':
      return `• the model is busy; retrying in ${Math.max(1, Math.round(event.delayMs / 1000))} s`;
    default:
      return null;
  }
}
