import OpenAI from 'openai';
import type { ModelClient, ModelRequest, ModelResponse } from './types.js';
import { assistantMessage, compatFor, stopReasonOf, usageOf, type RawToolCall } from './compat.js';
import { abortedResponse, classifyError, errorResponse, ModelTimeoutError } from './model-error.js';
import { StreamAccumulator } from './stream.js';
import { anySignal } from '../lib/abort.js';

export interface OpenAIModelOptions {
  /** Local servers (Ollama, llama.cpp) ignore the key; an empty one is sent as "unused". */
  apiKey: string;
  /** Any OpenAI-compatible `/v1` root; OpenAI's own when undefined. */
  baseURL?: string;
  model: string;
  stream: boolean;
  /** Plain: deadline for the whole call. Stream: the longest silence between two chunks. */
  timeoutMs: number;
  maxTokens?: number;
}

type Params = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;

/** The text with every occurrence of the key replaced (keys shorter than 8 characters are placeholders, not secrets). */
export function withoutSecret(text: string, key: string): string {
  return key.length >= 8 ? text.split(key).join('[redacted]') : text;
}

export function createOpenAIModel(options: OpenAIModelOptions): ModelClient {
  // maxRetries 0: the loop retries, so it can honour Retry-After, emit events and stay abortable.
  const client = new OpenAI({
    apiKey: options.apiKey || 'unused',
    ...(options.baseURL ? { baseURL: options.baseURL } : {}),
    maxRetries: 0,
    timeout: options.timeoutMs,
  });
  const compat = compatFor(options.baseURL);

  async function complete(request: ModelRequest): Promise<ModelResponse> {
    if (request.signal.aborted) return abortedResponse();
    const body: Params = {
      model: options.model,
      messages: request.messages,
      ...(request.tools.length > 0 ? { tools: request.tools } : {}),
      ...(options.maxTokens !== undefined ? { [compat.maxTokensField]: options.maxTokens } : {}),
    };
    const deadline = new Deadline(options.timeoutMs);
    const { signal, dispose } = anySignal([request.signal, deadline.signal]);
    try {
      return options.stream ? await completeStreaming(body, signal, deadline, request.onText) : await completePlain(body, signal);
    } catch (err) {
      if (request.signal.aborted) return abortedResponse();
      const error = classifyError(deadline.fired ? new ModelTimeoutError(options.timeoutMs) : err);
      // Some compatible servers echo the key in their error text, which becomes logs, job data and the run record.
      return errorResponse({ ...error, message: withoutSecret(error.message, options.apiKey) });
    } finally {
      deadline.clear();
      dispose();
    }
  }

  async function completePlain(body: Params, signal: AbortSignal): Promise<ModelResponse> {
    const completion = await client.chat.completions.create(body, { signal });
    const choice = completion.choices?.[0];
    if (!choice) return errorResponse({ message: 'model endpoint returned no choices', retryable: true });
    const calls: RawToolCall[] = (choice.message.tool_calls ?? [])
      .filter((c) => c.type === 'function' || c.type === undefined)
      .map((c) => ('function' in c ? { id: c.id, name: c.function?.name, arguments: c.function?.arguments } : {}));
    return finish(choice.message.content, calls, choice.finish_reason, completion.usage);
  }

  async function completeStreaming(
    body: Params,
    signal: AbortSignal,
    deadline: Deadline,
    onText: ((text: string) => void) | undefined,
  ): Promise<ModelResponse> {
    const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }, { signal });
    const acc = new StreamAccumulator();
    for await (const chunk of stream) {
      deadline.reset();
      const before = acc.text.length;
      acc.add(chunk);
      if (acc.text.length !== before) onText?.(acc.text);
    }
    return finish(acc.text, acc.toolCalls(), acc.finishReason, acc.usage);
  }

  return { name: options.model, complete };
}

function finish(
  text: string | null | undefined,
  calls: RawToolCall[],
  finishReason: string | null | undefined,
  usage: Parameters<typeof usageOf>[0],
): ModelResponse {
  const message = assistantMessage(text, calls);
  const hasCalls = (message.tool_calls?.length ?? 0) > 0;
  return { message, stopReason: stopReasonOf(finishReason, hasCalls), usage: usageOf(usage) };
}

/** Our own timeout, told apart from the caller's abort; `reset` turns it into an idle timeout. */
class Deadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout;
  fired = false;
  constructor(private readonly ms: number) {
    this.timer = this.start();
  }
  get signal(): AbortSignal {
    return this.controller.signal;
  }
  reset(): void {
    clearTimeout(this.timer);
    this.timer = this.start();
  }
  clear(): void {
    clearTimeout(this.timer);
  }
  private start(): NodeJS.Timeout {
    return setTimeout(() => {
      this.fired = true;
      this.controller.abort(new ModelTimeoutError(this.ms));
    }, this.ms);
  }
}
