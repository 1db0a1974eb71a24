import type OpenAI from 'openai';
import { z } from 'zod';
import type { Tool } from './types.js';

/**
 * The tools as the model sees them. Parameters describe the *input* (defaults make fields optional);
 * a tool that brings its own JSON schema (an MCP tool) is shown that one as is.
 */
export function toModelTools(tools: readonly Tool[]): OpenAI.Chat.Completions.ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.inputSchema ?? parametersOf(tool.schema) },
  }));
}

/** Converting a schema costs more than a whole turn's bookkeeping; schemas are module constants, so convert each once. */
const converted = new WeakMap<z.ZodType, Record<string, unknown>>();

function parametersOf(schema: z.ZodType): Record<string, unknown> {
  const cached = converted.get(schema);
  if (cached) return cached;
  const json = z.toJSONSchema(schema, {
    io: 'input',
    // z.int() adds ±MAX_SAFE_INTEGER bounds: prompt tokens that say nothing.
    override: ({ jsonSchema }) => {
      if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
      if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
    },
  }) as Record<string, unknown>;
  delete json.$schema;
  converted.set(schema, json);
  return json;
}
