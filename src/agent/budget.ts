import type OpenAI from 'openai';
import type { ChatMessage } from './types.js';

/**
 * A cheap, deliberately conservative token estimate: ASCII characters / 4 plus one token per
 * non-ASCII character (CJK text is about a token per character), over the JSON of the messages
 * and tool schemas, so the JSON punctuation stands in for the per-message overhead. No tokenizer:
 * it runs before every model call and must not depend on which model is behind the endpoint.
 */
export function estimateTokens(messages: readonly ChatMessage[], tools: readonly OpenAI.Chat.Completions.ChatCompletionTool[] = []): number {
  return estimateTextTokens(JSON.stringify(messages)) + (tools.length > 0 ? estimateTextTokens(JSON.stringify(tools)) : 0);
}

export function estimateTextTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) < 128) ascii++;
    else other++;
  }
  return Math.ceil(ascii / 4) + other;
}
