import type { InboundMessage } from '../channels/types.js';

/** A message that has started this many runs without being committed is given up on. */
export const MAX_CLAIMS = 3;

export interface ClaimedMessage {
  message: InboundMessage;
  raw: string;
  /** Runs that have started with it at the head of the inbox, this one included (0 when not the head). */
  claims: number;
}

export type Turn = { kind: 'agent'; taken: ClaimedMessage[] } | { kind: 'reset'; taken: ClaimedMessage[] } | { kind: 'crashed'; taken: ClaimedMessage[] };

/**
 * Fold policy: the messages waiting at the head of the inbox are answered together in one turn
 * (at most foldMax, as claimed), in arrival order, as long as one person sent them: another
 * person's message starts a turn of its own (still serial), so the requester, the approver rule
 * and the budget of a turn are always one person's. A control message (/reset) is a turn of its
 * own, so it takes effect exactly between the messages sent before and after it; so is a
 * scheduled one (it runs with fewer rights than a person's message: no approvals, no schedules). A head message
 * that has already started MAX_CLAIMS runs (its worker died each time) is answered with an
 * honest line instead of being tried forever.
 */
export function selectTurn(claimed: ClaimedMessage[]): Turn {
  const [head] = claimed;
  if (!head) throw new Error('selectTurn needs at least one message');
  if (head.claims > MAX_CLAIMS) return { kind: 'crashed', taken: [head] };
  if (head.message.command === 'reset') return { kind: 'reset', taken: [head] };
  if (head.message.scheduled) return { kind: 'agent', taken: [head] };
  const taken: ClaimedMessage[] = [];
  for (const c of claimed) {
    if (c.message.command !== undefined || c.message.scheduled || c.claims > MAX_CLAIMS || !sameSender(c.message, head.message)) break;
    taken.push(c);
  }
  return { kind: 'agent', taken };
}

function sameSender(a: InboundMessage, b: InboundMessage): boolean {
  return a.platform === b.platform && a.sender.id === b.sender.id;
}
