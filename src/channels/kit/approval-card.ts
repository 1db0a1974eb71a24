import type { ApprovalCard, ApprovalOutcome, ApprovalRecordView, ChannelDecideResult } from '../types.js';

/** The card of an approval, as every platform shows it (the worker when posting and editing it, a gateway answering a click). */
export function cardOf(r: Pick<ApprovalRecordView, 'id' | 'tool' | 'args' | 'requester' | 'requesterName' | 'expiresAt'>): ApprovalCard {
  return { id: r.id, tool: r.tool, args: r.args, requester: r.requesterName ?? r.requester, expiresAt: r.expiresAt };
}

/** The part of a card that shows what would run: the command itself for run_command, else the arguments as sent. */
export function cardSubject(card: Pick<ApprovalCard, 'tool' | 'args'>): { label: string; code: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(card.args);
  } catch {
    parsed = undefined;
  }
  const command = typeof parsed === 'object' && parsed !== null && 'command' in parsed ? (parsed as { command: unknown }).command : undefined;
  if (card.tool === 'run_command' && typeof command === 'string') return { label: 'Run this command in the workspace?', code: command };
  return { label: `Call ${card.tool} with these arguments?`, code: parsed === undefined ? card.args : JSON.stringify(parsed, null, 2) };
}

const time = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** The card's question line: who asked, and until when it waits (UTC). */
export function cardFooter(card: ApprovalCard): string {
  return `Asked by ${card.requester}. Waits until ${time(card.expiresAt)} UTC; no answer counts as deny.`;
}

/** What a decided card says instead of its buttons. */
export function decisionLine(outcome: ApprovalOutcome): string {
  switch (outcome.decision) {
    case 'approved':
      return `✅ Approved by ${outcome.by} at ${time(outcome.at)} UTC`;
    case 'denied':
      return `❌ Denied by ${outcome.by} at ${time(outcome.at)} UTC`;
    case 'expired':
      return `⌛ Expired at ${time(outcome.at)} UTC: nobody approved it (counts as deny)`;
    case 'cancelled':
      return `⏹ Cancelled at ${time(outcome.at)} UTC: the run was stopped`;
  }
}

/** What someone whose click did not decide reads, privately (each platform shows it its own way). */
export function refusalText(result: Exclude<ChannelDecideResult, { kind: 'decided' }>): string {
  switch (result.kind) {
    case 'not_allowed':
      return 'Only the person who asked, or an approver, can decide this.';
    case 'no_access':
      return 'You do not have access to this assistant, so your click changes nothing.';
    case 'unknown':
      return 'This request is no longer waiting for a decision.';
    case 'already': {
      const { status, by } = result.record;
      if (status === 'expired') return 'Already decided: nobody decided in time, so it counted as a deny.';
      if (status === 'cancelled') return 'Already decided: the run was stopped.';
      return `Already decided: ${status}${by ? ` by ${by}` : ''}.`;
    }
  }
}
