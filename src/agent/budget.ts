import type OpenAI from 'openai';
import type { ChatMessage } from './types.js';

/**
 * A cheap, deliberately conservative token estimate: ASCII characters / 4 plus one token per
 * non-ASCII character (CJK text is about a token per character), over the JSON of the messages
 * and tool schemas, so the JSON punctuation stands in for the per-message overhead. No tokenizer:
 * it runs before every model call and must not depend on which model is behind the endpoint.
 */
export function estimateTokens(messages: readonly ChatMessage[], tools: readonly OpenAI.Chat.Completions.ChatCompletionTool[] = []): number {
  let images = 0;
  // An image's base64 is not text the model reads: it costs about a fixed number of tokens however large.
  const json = JSON.stringify(messages, (key, value: unknown) => {
    if (key === 'url' && typeof value === 'string' && value.startsWith('data:')) {
      images++;
      return '';
    }
    return value;
  });
  return estimateTextTokens(json) + images * IMAGE_TOKENS + (tools.length > 0 ? estimateTextTokens(JSON.stringify(tools)) : 0);
}

/**
 * What one image part is counted as: OpenAI's high-detail cost tops out near 1,100 tokens for a
 * 2048-pixel tile grid (other vision APIs are in the same range); rounded up to stay conservative.
 */
export const IMAGE_TOKENS = 1_500;

export function estimateTextTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) < 128) ascii++;
    else other++;
  }
  return Math.ceil(ascii / 4) + other;
}
