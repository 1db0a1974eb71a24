import { runToolCall } from '../tools/run.js';
import type { AssistantMessage } from './types.js';
import { append, emit, type RunState } from './state.js';

/**
 * Runs the assistant message's tool calls in order, appending each result as a `tool` message
 * with the call's id. Returns false if the run was cancelled; the calls not yet run then get an
 * error result, so the transcript never holds a tool call without its answer.
 */
export async function runTools(state: RunState, message: AssistantMessage): Promise<boolean> {
  const { tools, signal } = state.input;
  for (const call of message.tool_calls ?? []) {
    if (call.type !== 'function') continue;
    if (signal.aborted) {
      append(state, { role: 'tool', tool_call_id: call.id, content: 'Error: not run: the run was cancelled.' });
      continue;
    }
    const { name, arguments: args } = call.function;
    emit(state, { type: 'tool_start', step: state.steps, callId: call.id, name, args });
    const started = Date.now();
    const result = await runToolCall(tools, { name, arguments: args }, signal);
    state.toolCalls++;
    append(state, { role: 'tool', tool_call_id: call.id, content: result.content });
    emit(state, {
      type: 'tool_end',
      step: state.steps,
      callId: call.id,
      name,
      ok: result.ok,
      summary: result.summary,
      ms: Date.now() - started,
    });
  }
  return !signal.aborted;
}
