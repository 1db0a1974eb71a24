import { clip } from '../lib/text.js';
import { asData } from './untrusted.js';
import { estimateTextTokens, estimateTokens } from './budget.js';
import { textOf } from './resolve.js';
import type { ChatMessage, ModelClient, TokenUsage } from './types.js';

/**
 * History compaction: once a session's turns no longer fit AGENT_HISTORY_TOKENS, the older ones
 * are summarised by the model into one note that the prompt carries instead of them. The raw
 * turns are kept (the note only says how many of them it covers), so a bad summary loses nothing.
 */
export interface HistorySummary {
  /** The turns it covers: the first `covers` ever appended to the session's history. */
  covers: number;
  text: string;
  at: number;
}

export type HistoryPlan =
  /** Summary (if any) and every turn after it fit the budget. */
  | { kind: 'fits' }
  /** The oldest `older` turns go into a new summary; `recent` are kept as they are. */
  | { kind: 'summarise'; older: ChatMessage[][]; recent: ChatMessage[][] }
  /** Even the newest turn alone does not leave room: nothing to summarise, the budget cuts as before. */
  | { kind: 'cut' };

/**
 * Which turns to summarise: the newest whole turns that fit in half the budget stay verbatim
 * (so the next compaction is some turns away, not on every message; the newest always stays),
 * the older ones are summarised, oldest first and at most `maxInputTokens` of them in one call
 * (the rest wait for the next turn's compaction).
 */
export function planHistory(
  turns: readonly ChatMessage[][],
  summaryTokens: number,
  budgetTokens: number,
  maxInputTokens: number,
  /** Each turn's estimate, when the caller has it already (e.g. from the stored JSON). */
  costs: readonly number[] = turns.map((t) => estimateTokens(t)),
): HistoryPlan {
  if (summaryTokens + costs.reduce((a, b) => a + b, 0) <= budgetTokens) return { kind: 'fits' };
  let kept = 0;
  let used = 0;
  for (let i = turns.length - 1; i >= 0 && used + costs[i]! <= budgetTokens / 2; i--) {
    used += costs[i]!;
    kept++;
  }
  const older = turns.length - Math.max(kept, 1);
  if (older <= 0) return { kind: 'cut' };
  let taken = 0;
  for (let input = 0; taken < older && (taken === 0 || input + costs[taken]! <= maxInputTokens); taken++) input += costs[taken]!;
  return { kind: 'summarise', older: turns.slice(0, taken), recent: turns.slice(taken) };
}

/** Longest text of one message in what the summariser reads. */
const MESSAGE_CHARS = 1_500;
/** Longest summary kept (a model that ignores "at most N words" does not fill the budget). */
export const SUMMARY_MAX_CHARS = 6_000;

const INSTRUCTIONS = [
  'You keep the running summary of a chat between a person and you, an assistant that works with files and tools in a workspace.',
  'Write the new summary from the summary so far and the turns that follow it.',
  'Keep what later turns may need: facts and names the person gave, their preferences, decisions, requests still open, and the files you made or changed with what they hold.',
  'Drop greetings and small talk. Write plain text, at most 300 words, in the language of the conversation. Answer with the summary only.',
].join(' ');

export type SummaryResult = { ok: true; text: string; usage: TokenUsage } | { ok: false; error: string; usage: TokenUsage };

/** Asks the model for the summary of `previous` plus `turns`. Never throws. */
export async function summariseTurns(
  model: ModelClient,
  previous: string | undefined,
  turns: readonly ChatMessage[][],
  signal: AbortSignal,
): Promise<SummaryResult> {
  const rendered = turns
    .map((t) =>
      t
        .map(renderMessage)
        .filter((l) => l !== '')
        .join('\n'),
    )
    .join('\n\n');
  const response = await model.complete({
    messages: [
      { role: 'system', content: INSTRUCTIONS },
      { role: 'user', content: `Summary so far:\n${previous ?? '(none yet)'}\n\nTurns that follow it:\n${rendered}` },
    ],
    tools: [],
    signal,
  });
  if (response.stopReason === 'error') return { ok: false, error: response.error?.message ?? 'the model call failed', usage: response.usage };
  const text = textOf(response.message).trim();
  if (text === '') return { ok: false, error: 'the model answered with an empty summary', usage: response.usage };
  return { ok: true, text: clip(text, SUMMARY_MAX_CHARS), usage: response.usage };
}

/**
 * What the prompt carries of the summary: a user-side message before the recent turns, marked as
 * data. It was written from the person's words and tool results, so it never goes in the system message.
 */
export function summaryMessage(summary: HistorySummary): ChatMessage {
  return {
    role: 'user',
    content: asData(
      'a summary of earlier turns',
      `Earlier in this conversation: your summary of the ${summary.covers} earliest turns, which are no longer shown:\n${summary.text}`,
    ),
  };
}

export function summaryTokens(summary: HistorySummary | undefined): number {
  return summary ? estimateTextTokens(String(summaryMessage(summary).content)) : 0;
}

function renderMessage(m: ChatMessage): string {
  const cut = (s: string) => clip(s, MESSAGE_CHARS, ' […]');
  if (m.role === 'user') return `Person: ${cut(textOf(m))}`;
  if (m.role === 'assistant') {
    const calls = (m.tool_calls ?? [])
      .map((c) => (c.type === 'function' ? `[you called ${c.function.name} ${cut(c.function.arguments)}]` : ''))
      .filter(Boolean);
    return [textOf(m) ? `You: ${cut(textOf(m))}` : '', ...calls].filter(Boolean).join('\n');
  }
  if (m.role === 'tool') return `[tool result: ${cut(textOf(m))}]`;
  return '';
}
