import { runToolCall } from '../tools/run.js';
import type { ToolResult } from '../tools/types.js';
import type { AssistantMessage } from './types.js';
import { interruptedResult, refusedResult, unattendedResult } from './replay.js';
import { append, emit, type RunState } from './state.js';
import { ApprovalPending, RunSuspended } from './suspend.js';

/**
 * Runs the assistant message's tool calls in order, appending each result as a `tool` message
 * with the call's id. Returns false if the run was cancelled; the calls not yet run then get an
 * error result, so the transcript never holds a tool call without its answer.
 *
 * Write-ahead: a call is journaled before it starts (with the step's model response, in one
 * write) and its result after. A call an earlier run finished is not run again: its recorded
 * result is used. A call an earlier run started without a recorded result is run again only
 * when the tool only reads; otherwise the model is told it was interrupted. A call that needs
 * approval and has no decision in the journal parks the run (ApprovalPending), or is refused at
 * once when nobody can approve (a scheduled turn); a denied or expired one is not run and the
 * model reads why.
 */
export async function runTools(state: RunState, message: AssistantMessage, narration: string): Promise<boolean> {
  const { tools, signal, journal, suspend, limits } = state.input;
  const step = state.steps;
  // The narration came with the model response: replayed when the response was.
  let narrated = narration === '';
  const narrate = () => {
    if (narrated) return;
    narrated = true;
    emit(state, { type: 'narration', step, text: narration, ...(state.replay.model(step) && { replayed: true as const }) });
  };

  for (const call of message.tool_calls ?? []) {
    if (call.type !== 'function') continue;
    if (signal.aborted) {
      append(state, { role: 'tool', tool_call_id: call.id, content: 'Error: not run: the run was cancelled.' });
      continue;
    }
    const { name, arguments: args } = call.function;
    const callId = call.id;
    const recorded = state.replay.result(step, callId);
    if (recorded) {
      narrate();
      emit(state, { type: 'tool_start', step, callId, name, args, replayed: true });
      state.toolCalls++;
      append(state, { role: 'tool', tool_call_id: callId, content: recorded.content });
      emit(state, { type: 'tool_end', step, callId, name, ok: recorded.ok, summary: recorded.summary, ms: recorded.ms, replayed: true });
      continue;
    }
    if (suspend?.aborted) throw new RunSuspended('shutdown', 'the worker is stopping');

    const tool = tools.find((t) => t.name === name);
    const startedBefore = state.replay.wasStarted(step, callId);
    const rerunnable = !tool || tool.readOnly === true;
    const gated = !startedBefore && state.input.needsApproval?.(name) === true;
    const approval = gated ? state.replay.approval({ step, callId, name, args }) : undefined;
    const unattended = gated && !approval ? state.input.unattended : undefined;
    if (gated && !approval && unattended === undefined) {
      narrate();
      throw new ApprovalPending({ step, callId, name, args });
    }
    let result: ToolResult;
    let ms = 0;
    if (startedBefore && !rerunnable) {
      narrate();
      emit(state, { type: 'tool_start', step, callId, name, args, replayed: true });
      result = interruptedResult(name);
    } else if (unattended !== undefined) {
      narrate();
      emit(state, { type: 'tool_start', step, callId, name, args });
      result = unattendedResult(name, unattended);
    } else if (approval && approval.decision !== 'approved') {
      narrate();
      emit(state, { type: 'tool_start', step, callId, name, args });
      result = refusedResult(name, { decision: approval.decision, ...(approval.by !== undefined && { by: approval.by }) });
    } else {
      if (!startedBefore) {
        journal?.record({ t: 'tool_start', step, callId, name, args, ...(tool?.readOnly && { readOnly: true }) });
        await journal?.flush();
      }
      narrate();
      emit(state, { type: 'tool_start', step, callId, name, args });
      const started = Date.now();
      result = await runToolCall(tools, { name, arguments: args }, signal, { ...(limits.toolTimeoutMs !== undefined && { timeoutMs: limits.toolTimeoutMs }) });
      ms = Date.now() - started;
    }
    state.toolCalls++;
    append(state, { role: 'tool', tool_call_id: callId, content: result.content });
    journal?.record({ t: 'tool_end', step, callId, name, ok: result.ok, content: result.content, summary: result.summary, ms });
    emit(state, { type: 'tool_end', step, callId, name, ok: result.ok, summary: result.summary, ms });
  }
  narrate();
  return !signal.aborted;
}
