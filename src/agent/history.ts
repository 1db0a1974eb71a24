import { estimateTokens } from './budget.js';
import type { ChatMessage } from './types.js';

/**
 * The most recent whole turns that fit in `budgetTokens` (estimated as in budget.ts), oldest
 * first. A turn is never split, so no tool message loses its assistant tool call; the first turn
 * that does not fit ends the walk back, so the kept history has no gaps.
 */
export function boundHistory(turns: readonly (readonly ChatMessage[])[], budgetTokens: number): ChatMessage[] {
  const kept: (readonly ChatMessage[])[] = [];
  let used = 0;
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i] as readonly ChatMessage[];
    const cost = estimateTokens(turn);
    if (used + cost > budgetTokens) break;
    used += cost;
    kept.push(turn);
  }
  return kept.reverse().flat();
}

/**
 * A turn's transcript as stored for later turns: image parts become a line naming that, tool results longer than `maxToolResultChars`
 * are cut with a note, and so are long string values inside tool-call arguments (e.g. a whole
 * file passed to write_file). Arguments stay valid JSON, since some servers parse them.
 */
export function compactTurn(transcript: readonly ChatMessage[], maxToolResultChars: number): ChatMessage[] {
  return transcript.map((m): ChatMessage => {
    if (m.role === 'user') return withoutImages(m);
    if (m.role === 'tool' && typeof m.content === 'string' && m.content.length > maxToolResultChars) {
      return { ...m, content: cut(m.content, maxToolResultChars, 'tool result') };
    }
    if (m.role === 'assistant' && m.tool_calls?.some((c) => c.type === 'function' && c.function.arguments.length > maxToolResultChars)) {
      return {
        ...m,
        tool_calls: m.tool_calls.map((c) =>
          c.type === 'function' && c.function.arguments.length > maxToolResultChars
            ? { ...c, function: { ...c.function, arguments: compactArguments(c.function.arguments, maxToolResultChars) } }
            : c,
        ),
      };
    }
    return m;
  });
}

/**
 * A picture is shown in its own turn only: what is kept of it (history, run records) is a line
 * saying so, beside the text that names its file in the workspace. Megabytes of base64 in Redis
 * would be sent again with every later turn.
 */
export function withoutImages(m: ChatMessage): ChatMessage {
  if (m.role !== 'user' || !Array.isArray(m.content) || !m.content.some((p) => p.type === 'image_url')) return m;
  return { ...m, content: m.content.map((p) => (p.type === 'image_url' ? { type: 'text' as const, text: IMAGE_NOT_KEPT } : p)) };
}

export const IMAGE_NOT_KEPT = '[An image was shown here; it is not kept in the history. Its file is in the workspace.]';

function cut(text: string, max: number, what: string): string {
  return `${text.slice(0, max)}\n[… ${what} cut for history: ${text.length - max} of ${text.length} characters omitted]`;
}

function compactArguments(args: string, max: number): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
    const entries = Object.entries(parsed).map(([k, v]) => [k, typeof v === 'string' && v.length > max ? cut(v, max, 'value') : v]);
    const compacted = JSON.stringify(Object.fromEntries(entries));
    if (compacted.length <= max * 2) return compacted;
  }
  return JSON.stringify({ _omitted: `arguments of ${args.length} characters omitted from history` });
}
