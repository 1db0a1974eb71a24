import type OpenAI from 'openai';
import type { ModelClient, ModelRequest, ModelResponse, TokenReservation } from './types.js';
import { estimateTextTokens, estimateTokens } from './budget.js';
import { abortedResponse, errorResponse, refuseDuplicateCallIds } from './model-error.js';
import { textOf } from './resolve.js';
import { addUsage, emit, type RunState } from './state.js';
import { sleep } from '../lib/sleep.js';

/** First backoff delay before jitter; doubles per attempt, capped by limits.maxRetryDelayMs. */
const BASE_DELAY_MS = 500;

/**
 * One step's model call, retried on retryable errors up to limits.modelRetries times. It only
 * resends the messages: tool calls that already ran are in them as results, never re-run.
 * `reservation` is what the loop reserved of the requester's allowance for the first attempt;
 * each attempt settles what it was charged (see chargedTokens). An attempt charged nothing hands
 * the reservation on to its retry; after one that was charged, the retry reserves anew, and when
 * that is refused the step ends with the failed attempt's error.
 */
export async function callModel(state: RunState, tools: OpenAI.Chat.Completions.ChatCompletionTool[], reservation?: TokenReservation): Promise<ModelResponse> {
  const { model, signal, limits, budget } = state.input;
  const prompt = budget ? estimateTokens(state.messages, tools) : 0;
  let held = reservation;
  for (let attempt = 0; ; attempt++) {
    const step = state.steps;
    const onText = (text: string) => emit(state, { type: 'answer_text', step, text });
    const response = refuseDuplicateCallIds(await safeComplete(model, { messages: [...state.messages], tools, signal, onText }));
    state.modelCalls++;
    addUsage(state, response.usage);
    const retry = response.stopReason === 'error' && response.error?.retryable === true && attempt < limits.modelRetries ? response.error : undefined;
    const last = signal.aborted || !retry;
    // Settled here, where only fresh calls pass: a response replayed from the journal never reaches callModel.
    const charged = chargedTokens(prompt, response);
    if (budget && held && (last || charged > 0)) {
      await budget.settle(held, charged);
      held = undefined;
    }
    if (signal.aborted) return abortedResponse();
    if (!retry) return response;
    if (budget && !held) {
      const again = await budget.reserve(prompt);
      if (!again.ok) return response;
      held = again.reservation;
    }
    const delayMs = retryDelay(attempt + 1, retry.retryAfterMs, limits.maxRetryDelayMs);
    emit(state, { type: 'model_retry', step: state.steps, attempt: attempt + 1, delayMs, error: retry.message });
    if (!(await sleep(delayMs, signal))) {
      if (budget && held) await budget.settle(held, 0);
      return abortedResponse();
    }
  }
}

/**
 * What one fresh model call costs the requester: its reported usage; when the endpoint reported
 * none (many compatible servers omit it, above all when streaming), the estimate of its prompt
 * plus that of its answer (the text and the tool calls' JSON). A failed or aborted call that
 * reports nothing used nothing.
 */
export function chargedTokens(promptEstimate: number, response: ModelResponse): number {
  if (response.usage.totalTokens > 0) return response.usage.totalTokens;
  if (response.stopReason === 'error' || response.stopReason === 'aborted') return 0;
  const calls = response.message.tool_calls ?? [];
  return promptEstimate + estimateTextTokens(textOf(response.message) + (calls.length > 0 ? JSON.stringify(calls) : ''));
}

/** The ModelClient contract says never throw; a client that does is treated as a hard error. */
async function safeComplete(model: ModelClient, request: ModelRequest): Promise<ModelResponse> {
  try {
    return await model.complete(request);
  } catch (err) {
    return errorResponse({ message: `model client threw: ${err instanceof Error ? err.message : String(err)}`, retryable: false });
  }
}

/**
 * max(exponential backoff with equal jitter, Retry-After), capped at `capMs`.
 * attempt 1 → 250–500 ms, 2 → 500–1000 ms, …
 */
export function retryDelay(attempt: number, retryAfterMs: number | undefined, capMs: number, random: () => number = Math.random): number {
  const base = BASE_DELAY_MS * 2 ** (attempt - 1);
  const jittered = base / 2 + (random() * base) / 2;
  return Math.round(Math.min(capMs, Math.max(jittered, retryAfterMs ?? 0)));
}
