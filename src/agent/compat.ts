import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import type { AssistantMessage, StopReason, TokenUsage } from './types.js';

type FunctionToolCall = OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;

/**
 * Every quirk of OpenAI-compatible servers (Ollama, vLLM, llama.cpp, OpenRouter) lives here,
 * so the model wrapper and the loop only ever see one canonical shape.
 */
export interface Compat {
  /** OpenAI's newer models want `max_completion_tokens`; most compatible servers only know `max_tokens`. */
  maxTokensField: 'max_completion_tokens' | 'max_tokens';
}

export function compatFor(baseURL: string | undefined): Compat {
  const official = baseURL === undefined || /(^|\.)api\.openai\.com(?=[:/]|$)/.test(hostOf(baseURL));
  return { maxTokensField: official ? 'max_completion_tokens' : 'max_tokens' };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** A tool call as servers send it: any of id, type, name or arguments may be missing. */
export interface RawToolCall {
  id?: string | null;
  name?: string | null;
  arguments?: string | null;
}

/**
 * The canonical assistant message: content is the text, or null when empty and tool calls exist
 * (servers differ on null vs ""); every tool call has an id (generated when the server sent none)
 * and arguments that are at least "{}" (some servers send "" for argument-less calls).
 */
export function assistantMessage(text: string | null | undefined, rawCalls: readonly RawToolCall[]): AssistantMessage {
  const toolCalls: FunctionToolCall[] = rawCalls
    .filter((c) => (c.name ?? '') !== '' || (c.arguments ?? '') !== '')
    .map((c) => ({
      id: c.id ? c.id : generatedCallId(),
      type: 'function',
      function: { name: c.name ?? '', arguments: (c.arguments ?? '').trim() === '' ? '{}' : (c.arguments as string) },
    }));
  const content = text ?? '';
  if (toolCalls.length === 0) return { role: 'assistant', content };
  return { role: 'assistant', content: content === '' ? null : content, tool_calls: toolCalls };
}

export function generatedCallId(): string {
  return `call_sb_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
}

/** Tool calls present win over whatever finish_reason says (some servers send 'stop' with calls). */
export function stopReasonOf(finishReason: string | null | undefined, hasToolCalls: boolean): StopReason {
  if (hasToolCalls) return 'toolUse';
  if (finishReason === 'length') return 'length';
  return 'stop';
}

/** Missing or partial usage (common on compatible servers, and on streams without include_usage) counts as 0. */
export function usageOf(u: { prompt_tokens?: number | null; completion_tokens?: number | null; total_tokens?: number | null } | null | undefined): TokenUsage {
  const promptTokens = num(u?.prompt_tokens);
  const completionTokens = num(u?.completion_tokens);
  const total = num(u?.total_tokens);
  return { promptTokens, completionTokens, totalTokens: total > 0 ? total : promptTokens + completionTokens };
}

function num(n: number | null | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) ? n : 0;
}

export const ZERO_USAGE: TokenUsage = Object.freeze({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
