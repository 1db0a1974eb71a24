import { toModelTools } from '../tools/schema.js';
import type { AgentRunInput, AssistantMessage, ChatMessage, ModelResponse, RunOutcome, TokenReservation } from './types.js';
import { estimateTokens } from './budget.js';
import { callModel } from './model-step.js';
import { endsInToolCalls, isComplete, isRepeat, lastAssistant, textOf } from './resolve.js';
import { addUsage, append, appendNudge, createRunState, emit, outcomeOf, type RunState } from './state.js';
import { runTools } from './tool-step.js';
import { RunSuspended } from './suspend.js';

export const REPEAT_NUDGE =
  'You sent exactly the same reply and tool calls as your previous message; their results are above. ' +
  'Do not repeat it: change your approach, or give your final answer now.';
export const EMPTY_NUDGE = 'Your last reply was empty. Reply to the user now with your final answer, based on what you found.';

/**
 * Runs one turn to a terminal state. Every failure is an outcome; the only throw is a
 * RunSuspended (the worker is stopping, or the run lost its turn): then there is no outcome to
 * report, and another run resumes the turn from its journal.
 *
 * Each step: abort? → suspend? → step limit? → context budget? → the requester's token budget
 * (fresh calls only)? → model call (with retries, or the journal's record of it) → resolve: tool
 * calls are run and the loop goes on; final text completes; anything else fails. With a journal,
 * the loop replays what it recorded: the same responses and results give the same decisions, so
 * a resumed run arrives where the last one was.
 */
export async function runAgent(input: AgentRunInput): Promise<RunOutcome> {
  const state = createRunState(input);
  let outcome: RunOutcome;
  try {
    outcome = await drive(state);
  } catch (err) {
    if (err instanceof RunSuspended) throw err;
    // Only a bug gets here (model and tools never throw); the run still ends with a reason.
    outcome = outcomeOf(state, 'failed', { reason: 'model_error', detail: `internal error: ${String(err)}` });
  }
  if (outcome.state === 'completed') emit(state, { type: 'final', text: outcome.answer ?? '' });
  emit(state, { type: 'end', outcome });
  return outcome;
}

async function drive(state: RunState): Promise<RunOutcome> {
  const { signal, limits } = state.input;
  const tools = toModelTools(state.input.tools);
  for (;;) {
    if (signal.aborted) return cancelled(state);
    if (state.input.suspend?.aborted) throw new RunSuspended('shutdown', 'the worker is stopping');
    if (state.steps >= limits.maxSteps) {
      return outcomeOf(state, 'failed', { reason: 'step_limit', detail: `no final answer after ${state.steps} model calls` });
    }
    const estimate = estimateTokens(state.messages, tools);
    if (estimate > limits.maxContextTokens) {
      return outcomeOf(state, 'failed', {
        reason: 'context_budget',
        detail: `prompt estimated at ${estimate} tokens, over the budget of ${limits.maxContextTokens}`,
      });
    }

    const budget = await budgetRefusal(state, estimate);
    if ('refused' in budget) return outcomeOf(state, 'failed', { reason: 'budget', detail: budget.refused });

    state.steps++;
    const response = await modelStep(state, tools, budget.reservation);
    if (response.stopReason === 'aborted' || signal.aborted) return cancelled(state);
    if (response.stopReason === 'error') return modelFailed(state, response);

    const next = await resolveResponse(state, response);
    if (next !== 'continue') return next;
  }
}

/**
 * The next step's reservation of the requester's allowance (the prompt's estimate, settled by
 * the model call), or why it may not call the model: the estimate would go over what is left
 * today. A journaled step is replayed, not paid for again: it reserves nothing.
 */
async function budgetRefusal(state: RunState, estimate: number): Promise<{ refused: string } | { reservation?: TokenReservation }> {
  const budget = state.input.budget;
  if (!budget || state.replay.model(state.steps + 1)) return {};
  const held = await budget.reserve(estimate);
  return held.ok ? { reservation: held.reservation } : { refused: held.detail };
}

/** The step's model response: the journal's record of it, else a model call recorded once it succeeded. */
async function modelStep(state: RunState, tools: Parameters<typeof callModel>[1], reservation?: TokenReservation): Promise<ModelResponse> {
  const recorded = state.replay.model(state.steps);
  if (recorded) {
    emit(state, { type: 'model_call', step: state.steps, replayed: true });
    state.modelCalls += recorded.calls;
    addUsage(state, recorded.response.usage);
    return recorded.response;
  }
  const journal = state.input.journal;
  // The previous step's tool results are written before the model is asked about them.
  try {
    await journal?.flush();
  } catch (err) {
    if (reservation) await state.input.budget?.settle(reservation, 0);
    throw err;
  }
  emit(state, { type: 'model_call', step: state.steps });
  const before = state.modelCalls;
  const response = await callModel(state, tools, reservation);
  if (response.stopReason !== 'error' && response.stopReason !== 'aborted') {
    journal?.record({
      t: 'model',
      step: state.steps,
      calls: state.modelCalls - before,
      response: { message: response.message, stopReason: response.stopReason, usage: response.usage },
    });
  }
  return response;
}

/** Some result of the last assistant message's tool calls is an error (every error result starts with "Error:"). */
function lastCallsFailed(transcript: readonly ChatMessage[]): boolean {
  for (let i = transcript.length - 1; i >= 0; i--) {
    const m = transcript[i]!;
    if (m.role === 'assistant') return false;
    if (m.role === 'tool' && typeof m.content === 'string' && m.content.startsWith('Error:')) return true;
  }
  return false;
}

/** Decides what one successful model response means for the run. */
async function resolveResponse(state: RunState, response: ModelResponse): Promise<RunOutcome | 'continue'> {
  const message = response.message;
  const text = textOf(message).trim();
  const stepsLeft = state.steps < state.input.limits.maxSteps;

  if ((message.tool_calls?.length ?? 0) > 0) {
    // A call that failed (an error, or "interrupted" after a crash) may be retried as it was: only a repeat of calls that worked is dropped.
    if (!state.nudged.repeat && stepsLeft && isRepeat(lastAssistant(state.transcript), message) && !lastCallsFailed(state.transcript)) {
      // The repeat is dropped (its tools would only run again) and replaced by the nudge.
      state.nudged.repeat = true;
      appendNudge(state, REPEAT_NUDGE);
      emit(state, { type: 'nudge', step: state.steps, reason: 'repeat' });
      return 'continue';
    }
    append(state, message);
    const ran = await runTools(state, message, text);
    return ran ? 'continue' : cancelled(state);
  }

  if (text === '') {
    if (!state.nudged.empty && stepsLeft) {
      state.nudged.empty = true;
      appendNudge(state, EMPTY_NUDGE);
      emit(state, { type: 'nudge', step: state.steps, reason: 'empty' });
      return 'continue';
    }
    return endsInToolCalls(state.transcript)
      ? outcomeOf(state, 'failed', { reason: 'incomplete_turn', detail: 'the model returned nothing after its tool calls' })
      : outcomeOf(state, 'failed', { reason: 'empty_answer', detail: 'the model returned an empty answer' });
  }

  const final: AssistantMessage = { role: 'assistant', content: textOf(message) };
  append(state, final);
  if (!isComplete(state.transcript)) {
    return outcomeOf(state, 'failed', { reason: 'incomplete_turn', detail: 'a tool call has no result' });
  }
  const cut = response.stopReason === 'length' ? { detail: 'answer cut at the max_tokens limit (finish_reason length)' } : {};
  return outcomeOf(state, 'completed', { answer: text, ...cut });
}

/**
 * The model kept failing. If this run already has an answered tool-call turn and no final
 * answer, that is an incomplete turn (the user saw "Let me look…" and never got the answer);
 * otherwise a plain model error.
 */
function modelFailed(state: RunState, response: ModelResponse): RunOutcome {
  const error = response.error?.message ?? 'unknown model error';
  const attempts = `${state.modelCalls} model call(s)`;
  if (endsInToolCalls(state.transcript)) {
    return outcomeOf(state, 'failed', { reason: 'incomplete_turn', detail: `the model failed after its tool calls (${attempts}): ${error}` });
  }
  return outcomeOf(state, 'failed', { reason: 'model_error', detail: error });
}

function cancelled(state: RunState): RunOutcome {
  return outcomeOf(state, 'cancelled', { reason: 'cancelled', detail: 'the run was cancelled' });
}
