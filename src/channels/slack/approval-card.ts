import type { types as SlackTypes } from '@slack/bolt';
import type { ApprovalCard, ApprovalOutcome, InboundMessage } from '../types.js';
import { buttonLabels, cardFooter, cardSubject, decisionLine } from '../kit/approval-card.js';
import { approvalAction } from './approval-data.js';
import { escapePlain } from './format.js';
import type { SlackWriter } from './writer.js';

/** Slack refuses a section whose text is longer than this (`invalid_blocks`). */
export const SECTION_TEXT_LIMIT = 3_000;
const FENCE = '```';

type Block = SlackTypes.KnownBlock;

/** A user id Slack renders as the person's name (`<@U…>`); anything else is shown as plain text. */
const USER_ID = /^[UW][A-Z0-9]{2,}$/;

/**
 * The card's question in bold and the call in a code block, in one section under Slack's limit:
 * a very long call is clipped, saying how much is left out. `&`, `<`, `>` are escaped (the
 * arguments never ping anyone or become links) and a ``` inside the code cannot close the block.
 */
function subjectText(card: ApprovalCard): string {
  const { label, code } = cardSubject(card);
  const head = `*${escapePlain(label)}*\n${FENCE}\n`;
  const tail = `\n${FENCE}`;
  const safe = code.replaceAll(FENCE, '`\u200b``');
  const whole = escapePlain(safe);
  if (head.length + whole.length + tail.length <= SECTION_TEXT_LIMIT) return `${head}${whole}${tail}`;
  // Room for the note "… (N more characters)"; cut on a whole character (never half an escape or a surrogate pair).
  const budget = SECTION_TEXT_LIMIT - head.length - tail.length - 40;
  let shown = '';
  let used = 0;
  for (const ch of safe) {
    const escaped = escapePlain(ch);
    if (shown.length + escaped.length > budget) break;
    shown += escaped;
    used += ch.length;
  }
  return `${head}${shown}\n… (${safe.length - used} more characters)${tail}`;
}

/** Who asked and until when the card waits; the requester is mentioned (Slack shows their name). */
function footerText(card: ApprovalCard): string {
  const placeholder = '\u0000';
  const who = USER_ID.test(card.requester) ? `<@${card.requester}>` : escapePlain(card.requester);
  return escapePlain(cardFooter({ ...card, requester: placeholder })).replace(placeholder, who);
}

const section = (text: string): Block => ({ type: 'section', text: { type: 'mrkdwn', text } });
const context = (text: string): Block => ({ type: 'context', elements: [{ type: 'mrkdwn', text }] });

const button = (card: ApprovalCard, decision: 'approved' | 'denied'): SlackTypes.Button => ({
  type: 'button',
  text: { type: 'plain_text', text: decision === 'approved' ? buttonLabels(card).approve : buttonLabels(card).deny },
  style: decision === 'approved' ? 'primary' : 'danger',
  ...approvalAction(card.id, decision),
});

/** A waiting card: the question and the call, who asked, and the Approve / Deny (a memory card: Keep / Discard) buttons. */
export function cardMessage(card: ApprovalCard): { text: string; blocks: Block[] } {
  const subject = subjectText(card);
  const footer = footerText(card);
  return {
    text: `${subject}\n${footer}`,
    blocks: [
      section(subject),
      context(footer),
      { type: 'actions', block_id: `sb_approval_${card.id}`, elements: [button(card, 'approved'), button(card, 'denied')] },
    ],
  };
}

/** A decided card: the same question and call, and the decision where the buttons were. */
export function decidedMessage(card: ApprovalCard, outcome: ApprovalOutcome): { text: string; blocks: Block[] } {
  const subject = subjectText(card);
  const footer = footerText(card);
  const decision = escapePlain(decisionLine(outcome, card));
  return { text: `${subject}\n${footer}\n${decision}`, blocks: [section(subject), context(footer), section(decision)] };
}

/**
 * The approval card, where the answer would go (the request's thread): the call in a code
 * block, who asked, and Approve / Deny buttons the gateway's action listener decides. Not
 * repeated when its response is lost (it may have been posted).
 */
export async function postCard(w: SlackWriter, to: InboundMessage, card: ApprovalCard): Promise<string> {
  const { text, blocks } = cardMessage(card);
  const ts = await w.postMessage(to, text, 'card', { blocks });
  w.log.info({ channel: to.conversation, thread: to.thread, approval: card.id, ts }, 'approval card posted');
  return ts;
}

/** The decided card: the same question and call, the decision instead of the buttons. */
export async function settleCard(w: SlackWriter, to: InboundMessage, ts: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void> {
  const { text, blocks } = decidedMessage(card, outcome);
  await w.write(to.conversation, 'chat.update', () => w.client.chat.update({ channel: to.conversation, ts, text, blocks }), { idempotent: true });
}
