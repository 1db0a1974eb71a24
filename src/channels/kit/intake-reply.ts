import type { IntakeResult } from '../types.js';

/** What the channel shows the person for an intake result, if anything (a command's answer or a refusal). */
export function replyOf(result: IntakeResult): string | undefined {
  return result.kind === 'command' || result.kind === 'refused' ? result.reply : undefined;
}
