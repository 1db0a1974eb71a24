import { isForeign } from './inbound.js';
import type { ChannelApprovals, ChannelDecideResult } from '../types.js';
import { parseApprovalAction } from './approval-data.js';
import { refusalText } from '../kit/approval-card.js';

/** The fields of a `block_actions` interaction (a button click on a message) this channel reads. */
export interface SlackBlockActions {
  type: 'block_actions';
  user: { id: string; username?: string; name?: string; team_id?: string };
  channel?: { id: string; name?: string };
  container?: { type?: string; message_ts?: string; channel_id?: string; thread_ts?: string; is_ephemeral?: boolean };
  message?: { ts: string; thread_ts?: string };
}

export interface SlackButtonAction {
  action_id: string;
  value?: string;
}

/** What a click came to: the desk's answer (absent: not one of our buttons) and what the clicker is told privately, if anything. */
export interface ClickOutcome {
  result?: ChannelDecideResult;
  /** Where to tell them: the card's channel and thread. */
  channel?: string;
  thread?: string;
  answer?: string;
}

/** The name a decision shows (on the card and to the model): `@username`, never a `<@U…>` mention. */
export function clickerName(user: SlackBlockActions['user']): string {
  const name = (user.username ?? user.name ?? '').replace(/[<>&@\s]/g, '').slice(0, 80);
  return name ? `@${name}` : user.id;
}

/**
 * One click of a card's Approve / Deny button: decided once, by the person who asked or an
 * approver. Anyone else, a second click and a card nobody waits for any more get a private
 * answer; a click that decided gets none (the card shows the decision: edited by the resumed run,
 * or for a memory card by the gateway).
 */
export async function decideClick(approvals: ChannelApprovals, body: SlackBlockActions, action: SlackButtonAction, homeTeam?: string): Promise<ClickOutcome> {
  const channel = body.channel?.id ?? body.container?.channel_id;
  const thread = body.message?.thread_ts ?? body.container?.thread_ts;
  const where = { ...(channel !== undefined && { channel }), ...(thread !== undefined && { thread }) };
  const parsed = parseApprovalAction(action);
  if (!parsed) return { ...where, answer: 'This button is not one of mine.' };
  const result = await approvals.decide(parsed.id, parsed.decision, {
    platform: 'slack',
    userId: body.user.id,
    name: clickerName(body.user),
    chat: channel ?? '',
    ...(isForeign(body.user.team_id, homeTeam) && { foreign: true as const }),
  });
  const answer = clickAnswer(result);
  return { result, ...where, ...(answer !== undefined && { answer }) };
}

/** What the person who clicked reads (only they see it); nothing when their click decided. */
export function clickAnswer(result: ChannelDecideResult): string | undefined {
  return result.kind === 'decided' ? undefined : refusalText(result);
}
