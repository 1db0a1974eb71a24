import { boundHistory } from '../agent/history.js';
import { planHistory, summariseTurns, summaryTokens, type HistorySummary } from '../agent/summary.js';
import type { ChatMessage, TokenAllowance } from '../agent/types.js';
import type { RunContext } from './context.js';
import type { SessionHistory } from '../session/scripts.js';
import { estimateTextTokens, estimateTokens } from '../agent/budget.js';
import { meteredModel } from './token-allowance.js';
import type { AgentRuntime } from './agent-runtime.js';

export interface PromptHistory {
  messages: ChatMessage[];
  summary?: HistorySummary;
}

/** Most the summariser reads in one call; older turns beyond it are summarised at the next turn. */
const SUMMARY_INPUT_TOKENS = 12_000;

/**
 * The history a turn's prompt carries within `budgetTokens`: the summary (if any) and the turns
 * after it. When they do not fit, the older of them are summarised first (the new summary is
 * stored beside the raw turns, which stay). A summary that fails, or a person with no tokens
 * left today, never blocks the turn: it goes on with the newest turns that fit, as without summaries.
 */
export async function historyForTurn(
  ctx: RunContext,
  stored: SessionHistory,
  agent: Pick<AgentRuntime, 'model' | 'historyTokens'>,
  signal: AbortSignal,
  allowance?: TokenAllowance,
): Promise<PromptHistory> {
  const budgetTokens = agent.historyTokens;
  const turns = stored.entries.map((s) => JSON.parse(s) as ChatMessage[]);
  const count = stored.count === null ? turns.length : Number(stored.count);
  const firstNumber = count - turns.length + 1;
  const summary = parseSummary(stored.summary, count);
  const covered = Math.max(summary?.covers ?? 0, firstNumber - 1);
  const after = turns.slice(covered - firstNumber + 1);
  // A stored turn is the JSON of its messages (images already taken out): its estimate is that text's.
  const costs = stored.entries.slice(covered - firstNumber + 1).map(estimateTextTokens);
  const plan = planHistory(after, summaryTokens(summary), budgetTokens, SUMMARY_INPUT_TOKENS, costs);
  const withSummary = (s: HistorySummary | undefined, recent: ChatMessage[][]): PromptHistory => ({
    messages: boundHistory(recent, budgetTokens - summaryTokens(s)),
    ...(s && { summary: s }),
  });
  if (plan.kind === 'fits') return { messages: after.flat(), ...(summary && { summary }) };
  if (plan.kind === 'cut') return withSummary(summary, after);

  const { deps, log } = ctx;
  // Reserved by the estimate of what the summariser reads; settled to its usage, or its estimate when none is reported.
  const held = await allowance?.reserve(estimateTokens(plan.older.flat()) + summaryTokens(summary));
  if (held && !held.ok) {
    deps.metrics?.historySummaries.inc({ outcome: 'skipped' });
    return withSummary(summary, after);
  }
  const metered = meteredModel(agent.model);
  const result = await summariseTurns(metered.model, summary?.text, plan.older, signal);
  if (held) await allowance?.settle(held.reservation, metered.charged());
  if (!result.ok) {
    deps.metrics?.historySummaries.inc({ outcome: 'failed' });
    log.warn({ error: result.error, turns: plan.older.length }, 'history summary failed; this turn goes on with the older turns left out');
    return withSummary(summary, after);
  }
  const next: HistorySummary = { covers: covered + plan.older.length, text: result.text, at: Date.now() };
  await ctx.store.saveSummary(JSON.stringify(next));
  deps.metrics?.historySummaries.inc({ outcome: 'ok' });
  log.info({ covers: next.covers, summarised: plan.older.length, chars: next.text.length, tokens: result.usage.totalTokens }, 'older history summarised');
  return withSummary(next, plan.recent);
}

/** The stored summary, unless it is unreadable or speaks of turns this history does not have (then it is ignored). */
function parseSummary(raw: string | null, count: number): HistorySummary | undefined {
  if (raw === null) return undefined;
  try {
    const s = JSON.parse(raw) as Partial<HistorySummary>;
    if (typeof s.text !== 'string' || typeof s.covers !== 'number' || s.covers < 1 || s.covers > count) return undefined;
    return { covers: s.covers, text: s.text, at: Number(s.at ?? 0) };
  } catch {
    return undefined;
  }
}
