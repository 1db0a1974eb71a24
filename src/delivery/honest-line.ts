import type { FailureReason } from '../agent/types.js';

/** The one line a user reads when a run did not complete. Never blames the user; says what to do. */
export function honestLine(reason: FailureReason | undefined, detail: { maxSteps?: number } = {}): string {
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
      return 'I could not process this message: every attempt crashed, so I gave up on it. Please send it again.';
    default:
      return 'The run failed for an unknown reason.';
  }
}
