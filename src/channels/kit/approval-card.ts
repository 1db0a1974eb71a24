import type { ApprovalCard, ApprovalOutcome, ApprovalRecordView, ChannelDecideResult, InboundMessage } from '../types.js';

/** The card of an approval, as every platform shows it (the worker when posting and editing it, a gateway answering a click). */
export function cardOf(r: Pick<ApprovalRecordView, 'id' | 'kind' | 'tool' | 'args' | 'requester' | 'requesterName' | 'expiresAt'>): ApprovalCard {
  return { id: r.id, ...(r.kind && { kind: r.kind }), tool: r.tool, args: r.args, requester: r.requesterName ?? r.requester, expiresAt: r.expiresAt };
}

/**
 * The part of a card that shows what would run: the command itself for run_command, else the
 * arguments as sent; a memory card's is the text that would be remembered (in a code block too:
 * it may come from what a tool read, so nothing in it renders).
 */
export function cardSubject(card: Pick<ApprovalCard, 'kind' | 'tool' | 'args'>): { label: string; code: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(card.args);
  } catch {
    parsed = undefined;
  }
  if (card.kind === 'memory') {
    const text = typeof parsed === 'object' && parsed !== null && 'text' in parsed ? (parsed as { text: unknown }).text : undefined;
    return { label: 'Remember this?', code: typeof text === 'string' ? text : card.args };
  }
  const command = typeof parsed === 'object' && parsed !== null && 'command' in parsed ? (parsed as { command: unknown }).command : undefined;
  if (card.tool === 'run_command' && typeof command === 'string') return { label: 'Run this command in the workspace?', code: command };
  return { label: `Call ${card.tool} with these arguments?`, code: parsed === undefined ? card.args : JSON.stringify(parsed, null, 2) };
}

const time = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** The card's question line: who asked, and until when it waits (UTC); a memory card's: who decides, and what Keep means. */
export function cardFooter(card: ApprovalCard): string {
  if (card.kind === 'memory')
    return `Only ${card.requester} can decide. Kept, it is used in their later conversations with this assistant; until then it is not used.`;
  return `Asked by ${card.requester}. Waits until ${time(card.expiresAt)} UTC; no answer counts as deny.`;
}

/** The two buttons' labels, the same on every platform. */
export function buttonLabels(card: Pick<ApprovalCard, 'kind'>): { approve: string; deny: string } {
  return card.kind === 'memory' ? { approve: 'Keep', deny: 'Discard' } : { approve: 'Approve', deny: 'Deny' };
}

/** What a decided card says instead of its buttons. */
export function decisionLine(outcome: ApprovalOutcome, card: Pick<ApprovalCard, 'kind'> = {}): string {
  if (card.kind === 'memory' && outcome.decision === 'approved') return `✅ Kept by ${outcome.by} at ${time(outcome.at)} UTC`;
  if (card.kind === 'memory' && outcome.decision === 'denied') return `🗑 Discarded by ${outcome.by} at ${time(outcome.at)} UTC`;
  if (card.kind === 'memory' && outcome.decision === 'expired') return `⌛ Expired at ${time(outcome.at)} UTC: nobody kept it, so it is not used`;
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
      if (result.record.kind === 'memory') return 'Only the person whose memory this is can decide whether it is kept.';
      return 'Only the person who asked, or an approver, can decide this.';
    case 'no_access':
      return 'You do not have access to this assistant, so your click changes nothing.';
    case 'unknown':
      return 'This request is no longer waiting for a decision.';
    case 'already': {
      const { status, by } = result.record;
      if (status === 'expired') return 'Already decided: nobody decided in time, so it counted as a deny.';
      if (status === 'cancelled') return 'Already decided: the run was stopped.';
      const said = result.record.kind === 'memory' ? (status === 'approved' ? 'kept' : 'discarded') : status;
      return `Already decided: ${said}${by ? ` by ${by}` : ''}.`;
    }
  }
}

/** What the person whose click decided reads, where the platform answers a click with text (Telegram). */
export function decidedAnswer(record: Pick<ApprovalRecordView, 'kind' | 'status'>): string {
  if (record.kind === 'memory') return record.status === 'approved' ? 'Kept: I will use it from now on.' : 'Discarded: forgotten.';
  return record.status === 'approved' ? 'Approved: the run goes on.' : 'Denied: the call will not run.';
}

/** A decided card as its platform's `approvalDecided` edits it: where it is, which message, what it shows. */
export interface SettledCard {
  to: InboundMessage;
  messageId: string;
  card: ApprovalCard;
  outcome: ApprovalOutcome;
}

/**
 * A memory card's edit after the click that decided it: the gateway makes it, since no run
 * resumes for a memory card (a run's card is edited by the resumed run: undefined here). The
 * message is the one recorded when the card was posted, else the one clicked; `to` is only the
 * card's place (an edit reads its platform, chat and thread, nothing else).
 */
export function settledMemoryCard(
  result: ChannelDecideResult,
  place: { platform: string; conversation: string; thread?: string | undefined },
  clicked: string | undefined,
): SettledCard | undefined {
  if (result.kind !== 'decided' || result.record.kind !== 'memory') return undefined;
  const { record } = result;
  const messageId = record.messageId ?? clicked;
  if (messageId === undefined || (record.status !== 'approved' && record.status !== 'denied')) return undefined;
  const to: InboundMessage = {
    v: 1,
    id: `card:${record.id}`,
    platform: place.platform,
    conversation: place.conversation,
    ...(place.thread !== undefined && { thread: place.thread }),
    sender: { id: record.requester, ...(record.requesterName !== undefined && { name: record.requesterName }) },
    text: '',
    attachments: [],
    eventId: `card:${record.id}`,
    receivedAt: record.at ?? Date.now(),
  };
  return { to, messageId, card: cardOf(record), outcome: { decision: record.status, by: record.by ?? record.requester, at: record.at ?? Date.now() } };
}
