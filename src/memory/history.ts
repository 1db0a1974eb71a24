import type { ChatMessage } from '../agent/types.js';

export const RECALL_WITHHELD = "(recalled memory: not kept in the conversation, so it reaches no one else's turn)";

/**
 * A turn as the conversation's history keeps it: what `recall` returned is the asker's memory,
 * so it is taken out — a later turn of someone else in the thread (or a summary of it) never reads it.
 */
export function withoutRecalledMemory(transcript: readonly ChatMessage[]): ChatMessage[] {
  const recalls = new Set<string>();
  for (const m of transcript) {
    if (m.role !== 'assistant' || !m.tool_calls) continue;
    for (const call of m.tool_calls) if (call.type === 'function' && call.function.name === 'recall') recalls.add(call.id);
  }
  if (recalls.size === 0) return [...transcript];
  return transcript.map((m) => (m.role === 'tool' && recalls.has(m.tool_call_id) ? { ...m, content: RECALL_WITHHELD } : m));
}
