import { getEncoding } from 'js-tiktoken';
import type { RecordedRequest } from '../test/fakes/openai-server.js';

const encoding = getEncoding('o200k_base');

/**
 * Tokens of one chat-completions request as the model reads it: each message's role and content
 * (and tool calls), plus the tool schemas as JSON. o200k_base is the tokenizer of OpenAI's
 * current models; other models count a little differently.
 */
export function requestTokens(req: RecordedRequest): { total: number; system: number; tools: number; messages: number } {
  const count = (text: string) => encoding.encode(text).length;
  const messages = req.body.messages as { role: string; content?: unknown; tool_calls?: unknown }[];
  const system = messages.filter((m) => m.role === 'system').reduce((n, m) => n + count(String(m.content ?? '')), 0);
  const rest = messages
    .filter((m) => m.role !== 'system')
    .reduce(
      (n, m) =>
        n +
        count(`${m.role}\n${typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '')}${m.tool_calls ? JSON.stringify(m.tool_calls) : ''}`),
      0,
    );
  const tools = req.body.tools ? count(JSON.stringify(req.body.tools)) : 0;
  return { total: system + rest + tools, system, tools, messages: rest };
}

export function requestBytes(req: RecordedRequest): number {
  return Buffer.byteLength(JSON.stringify(req.body));
}
