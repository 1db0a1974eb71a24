import type OpenAI from 'openai';
import type { ModelClient, ModelRequest, ModelResponse } from './types.js';
import { abortedResponse, errorResponse, refuseDuplicateCallIds } from './model-error.js';
import { addUsage, emit, type RunState } from './state.js';
import { sleep } from '../lib/sleep.js';

/** First backoff delay before jitter; doubles per attempt, capped by limits.maxRetryDelayMs. */
const BASE_DELAY_MS = 500;

/**
 * One step's model call, retried on retryable errors up to limits.modelRetries times. It only
 * resends the messages: tool calls that already ran are in them as results, never re-run.
 */
export async function callModel(
  state: RunState,
  tools: OpenAI.Chat.Completions.ChatCompletionTool[],
): Promise<ModelResponse> {
  const { model, signal, limits } = state.input;
  for (let attempt = 0; ; attempt++) {
    const step = state.steps;
    const onText = (text: string) => emit(state, { type: 'answer_text', step, text });
    const response = refuseDuplicateCallIds(await safeComplete(model, { messages: [...state.messages], tools, signal, onText }));
    state.modelCalls++;
    addUsage(state, response.usage);
    // Counted here, where only fresh calls pass: a response replayed from the journal never reaches callModel.
    if (response.usage.totalTokens > 0) await state.input.budget?.spend(response.usage.totalTokens);
    if (signal.aborted) return abortedResponse();
    if (response.stopReason !== 'error' || !response.error?.retryable || attempt >= limits.modelRetries) {
      return response;
    }
    const delayMs = retryDelay(attempt + 1, response.error.retryAfterMs, limits.maxRetryDelayMs);
    emit(state, { type: 'model_retry', step: state.steps, attempt: attempt + 1, delayMs, error: response.error.message });
    if (!(await sleep(delayMs, signal))) return abortedResponse();
  }
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
