import type OpenAI from 'openai';
import type { ChatMessage } from './types.js';

/**
 * A cheap, deliberately conservative token estimate: ASCII characters / 4 plus one token per
 * non-ASCII character (CJK text is about a token per character), over the JSON of the messages
 * and tool schemas, so the JSON punctuation stands in for the per-message overhead. No tokenizer:
 * it runs before every model call and must not depend on which model is behind the endpoint.
 */
export function estimateTokens(messages: readonly ChatMessage[], tools: readonly OpenAI.Chat.Completions.ChatCompletionTool[] = []): number {
  return estimateMessagesTokens(messages) + (tools.length > 0 ? toolsTokens(tools) : 0);
}

function estimateMessagesTokens(messages: readonly ChatMessage[]): number {
  // A replacer is what makes JSON.stringify slow: only a prompt with an inline image needs one.
  const plain = JSON.stringify(messages);
  if (!plain.includes('"url":"data:')) return estimateTextTokens(plain);
  let images = 0;
  // An image's base64 is not text the model reads: it costs about a fixed number of tokens however large.
  const json = JSON.stringify(messages, (key, value: unknown) => {
    if (key === 'url' && typeof value === 'string' && value.startsWith('data:')) {
      images++;
      return '';
    }
    return value;
  });
  return estimateTextTokens(json) + images * IMAGE_TOKENS;
}

/** A run offers the same tool list to every model call: its cost is counted once. */
const toolCosts = new WeakMap<readonly OpenAI.Chat.Completions.ChatCompletionTool[], number>();
function toolsTokens(tools: readonly OpenAI.Chat.Completions.ChatCompletionTool[]): number {
  let cost = toolCosts.get(tools);
  if (cost === undefined) toolCosts.set(tools, (cost = estimateTextTokens(JSON.stringify(tools))));
  return cost;
}

/**
 * What one image part is counted as: OpenAI's high-detail cost tops out near 1,100 tokens for a
 * 2048-pixel tile grid (other vision APIs are in the same range); rounded up to stay conservative.
 */
export const IMAGE_TOKENS = 1_500;

const NON_ASCII = /[^\x00-\x7f]/g;

export function estimateTextTokens(text: string): number {
  // A regular expression scans natively: four times the speed of a character loop on long prompts.
  const other = text.match(NON_ASCII)?.length ?? 0;
  return Math.ceil((text.length - other) / 4) + other;
}
