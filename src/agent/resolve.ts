import type { AssistantMessage, ChatMessage } from './types.js';

/**
 * The completion invariant: the last message is an assistant message with non-empty final text
 * and no tool calls, and every tool call in the transcript has a `tool` result with its id.
 * The loop reports 'completed' only when this holds.
 */
export function isComplete(transcript: readonly ChatMessage[]): boolean {
  const last = transcript[transcript.length - 1];
  if (!last || last.role !== 'assistant') return false;
  if ((last.tool_calls?.length ?? 0) > 0) return false;
  if (textOf(last).trim() === '') return false;
  return unansweredCallIds(transcript).length === 0;
}

/** Ids of tool calls that have no `tool` message answering them after the call. */
export function unansweredCallIds(transcript: readonly ChatMessage[]): string[] {
  const open = new Set<string>();
  for (const m of transcript) {
    if (m.role === 'assistant') for (const call of m.tool_calls ?? []) open.add(call.id);
    else if (m.role === 'tool') open.delete(m.tool_call_id);
  }
  return [...open];
}

/** The run's last assistant message, if any. */
export function lastAssistant(transcript: readonly ChatMessage[]): AssistantMessage | undefined {
  for (let i = transcript.length - 1; i >= 0; i--) {
    const m = transcript[i];
    if (m?.role === 'assistant') return m;
  }
  return undefined;
}

/** True when the run's last assistant message ends in tool calls: it started work and never answered. */
export function endsInToolCalls(transcript: readonly ChatMessage[]): boolean {
  return (lastAssistant(transcript)?.tool_calls?.length ?? 0) > 0;
}

/** Same visible text and the same tool calls (name + arguments, ids ignored) as `previous`. */
export function isRepeat(previous: AssistantMessage | undefined, next: AssistantMessage): boolean {
  if (!previous) return false;
  if (textOf(previous).trim() !== textOf(next).trim()) return false;
  return callsKey(previous) === callsKey(next);
}

function callsKey(m: AssistantMessage): string {
  return JSON.stringify((m.tool_calls ?? []).map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : [c.type, c.id])));
}

export function textOf(m: ChatMessage): string {
  const content = m.content;
  if (typeof content === 'string') return content;
  if (!content) return '';
  return content.map((part) => ('text' in part ? part.text : '')).join('');
}
