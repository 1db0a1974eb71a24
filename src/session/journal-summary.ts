import type { StepRecord } from '../agent/types.js';

/**
 * What a turn's journal shows was done outside the model's head, one short line each: the
 * results of side-effecting tool calls, and calls that started with no recorded outcome.
 * Read-only calls are left out: nothing needs checking after them.
 */
export function doneSoFar(records: readonly StepRecord[]): string[] {
  const ended = new Map<string, Extract<StepRecord, { t: 'tool_end' }>>();
  for (const r of records) if (r.t === 'tool_end') ended.set(r.callId, r);
  const lines: string[] = [];
  for (const r of records) {
    if (r.t !== 'tool_start' || r.readOnly) continue;
    const end = ended.get(r.callId);
    if (!end) lines.push(`${r.name} started, outcome unknown`);
    else if (end.ok) lines.push(end.summary);
  }
  return lines;
}
