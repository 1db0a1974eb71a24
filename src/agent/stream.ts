import type OpenAI from 'openai';
import type { RawToolCall } from './compat.js';

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;
type Usage = OpenAI.Completions.CompletionUsage;

/**
 * Folds `chat.completion.chunk`s into one answer: content deltas concatenated, tool-call deltas
 * merged by `index` (id and name from their first chunk, arguments concatenated), the last
 * finish_reason, and usage from whichever chunk carries it (the final one with include_usage).
 */
export class StreamAccumulator {
  text = '';
  finishReason: string | null = null;
  usage: Usage | null = null;
  private readonly calls: RawToolCall[] = [];
  private readonly slotByIndex = new Map<number, number>();
  private readonly slotById = new Map<string, number>();

  add(chunk: Chunk): void {
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string') this.text += delta.content;
    for (const d of delta.tool_calls ?? []) {
      const call = this.slotFor(d.index as number | undefined, d.id ?? undefined);
      if (d.id && !call.id) call.id = d.id;
      if (d.function?.name && !call.name) call.name = d.function.name;
      if (typeof d.function?.arguments === 'string') call.arguments = (call.arguments ?? '') + d.function.arguments;
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  toolCalls(): RawToolCall[] {
    return this.calls;
  }

  /** Compat: some servers omit `index`; then a new id opens a new call and no id continues the last one. */
  private slotFor(index: number | undefined, id: string | undefined): RawToolCall {
    let slot: number | undefined;
    if (typeof index === 'number') slot = this.slotByIndex.get(index);
    else if (id !== undefined) slot = this.slotById.get(id);
    else if (this.calls.length > 0) slot = this.calls.length - 1;
    if (slot === undefined) {
      slot = this.calls.length;
      this.calls.push({});
      if (typeof index === 'number') this.slotByIndex.set(index, slot);
    }
    if (id !== undefined && !this.slotById.has(id)) this.slotById.set(id, slot);
    return this.calls[slot] as RawToolCall;
  }
}
