import type { FailureReason } from '../../agent/types.js';
import { formatWait, nextUtcMidnight } from '../../access/utc-day.js';

export interface HonestDetail {
  maxSteps?: number;
  runTimeoutMs?: number;
  /** What the turn's journal shows was already done (one short line each), for worker_crashed. */
  done?: readonly string[];
  /** USER_DAILY_TOKENS, for budget. */
  dailyTokens?: number;
  /** When the line is written (budget says how long until the reset). */
  now?: number;
}

/** The one line a user reads when a run did not complete. Never blames the user; says what to do. */
export function honestLine(reason: FailureReason | undefined, detail: HonestDetail = {}): string {
  switch (reason) {
    case 'step_limit':
      return `I stopped after ${detail.maxSteps ?? 'the maximum number of'} steps without finishing. Ask me to continue, or narrow the request.`;
    case 'context_budget':
      return 'I stopped: this conversation no longer fits my context budget. Send /reset to start fresh.';
    case 'model_error':
      return 'I could not get an answer from the model (it kept failing). Please try again in a moment.';
    case 'incomplete_turn':
      return 'I started on this but the model stopped before giving an answer, so I have no result for you. Please try again.';
    case 'empty_answer':
      return 'The model returned an empty answer. Please try again or rephrase.';
    case 'cancelled':
      return 'Stopped.';
    case 'worker_crashed':
      if (detail.done?.length) {
        return `I could not finish this: the worker running it crashed at the same step every time, so I stopped trying. Already done: ${detail.done.join('; ')}. Check that before asking me to repeat anything.`;
      }
      return 'I could not process this message: every attempt crashed before doing anything, so I gave up on it. Please send it again.';
    case 'run_timeout':
      return `I stopped: this took longer than ${limitText(detail.runTimeoutMs)}. Ask me to continue, or narrow the request.`;
    case 'budget':
      return budgetLine(detail.dailyTokens, detail.now ?? Date.now());
    default:
      return 'The run failed for an unknown reason.';
  }
}

function limitText(ms: number | undefined): string {
  if (ms === undefined) return 'the time limit';
  return ms < 60_000 ? `the ${Math.max(1, Math.round(ms / 1000))}-second limit` : `the ${Math.round(ms / 60_000)}-minute limit`;
}

/** When the budget comes back is what the person needs; how it is configured is not theirs to read. */
export function budgetLine(dailyTokens: number | undefined, now: number): string {
  const amount = dailyTokens === undefined ? '' : ` (${dailyTokens.toLocaleString('en-US')} tokens)`;
  return `You have used today's token budget${amount}; it resets at 00:00 UTC, in ${formatWait(nextUtcMidnight(now) - now)}.`;
}
