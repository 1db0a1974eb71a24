import type { ApprovalCard, ApprovalOutcome, InboundMessage } from '../types.js';
import { buttonLabels, cardFooter, cardSubject, decisionLine } from '../kit/approval-card.js';
import { clip, cutAt } from '../../lib/text.js';
import { approvalCustomId } from './approval-data.js';
import { DiscordApiError } from './errors.js';
import { cardNonce, MESSAGE_LIMIT } from './ids.js';
import { NO_PINGS, quietReply, type DiscordWriter, type Posted } from './writer.js';

/** Component types and button styles (Discord's message components). */
const ACTION_ROW = 1;
const BUTTON = 2;
const SUCCESS = 3;
const DANGER = 4;

/** Room kept under the limit for the decision line, so the decided card is the same text plus it. */
const DECISION_ROOM = 200;

export interface ButtonComponent {
  type: typeof BUTTON;
  style: number;
  label: string;
  custom_id: string;
}

export interface ActionRow {
  type: typeof ACTION_ROW;
  components: ButtonComponent[];
}

/** Markdown that a name or a line of ours could carry by accident (a display name with `*` or `||`). */
export function escapeMarkdown(text: string): string {
  return text.replace(/([\\*_~`|])/g, '\\$1');
}

/** Inside a code block nothing renders but a closing fence: a run of three backticks is broken up. */
function unfence(code: string): string {
  return code.replace(/```/g, '`\u200b`\u200b`');
}

/** At most `room` characters: the head of `text` and how much was left out. */
function clipCode(text: string, room: number): string {
  if (text.length <= room) return text;
  const note = (n: number) => `\n… (${n} more characters)`;
  const shown = cutAt(text, Math.max(0, room - note(text.length).length));
  return `${shown}${note(text.length - shown.length)}`;
}

/**
 * The card's text: the question (bold), the call in a code block (clipped so the card, and the
 * card with its decision line, stay within one message), and who asked until when.
 */
export function cardText(card: ApprovalCard): string {
  const { label, code } = cardSubject(card);
  const head = `**${label}**\n\`\`\`\n`;
  const tail = `\n\`\`\`\n${escapeMarkdown(cardFooter(card))}`;
  return `${head}${clipCode(unfence(code), MESSAGE_LIMIT - DECISION_ROOM - head.length - tail.length)}${tail}`;
}

/** The decided card: the same text and the decision, in bold. */
export function decidedText(card: ApprovalCard, outcome: ApprovalOutcome): string {
  // Clipped before escaping: escaped, it still fits the room kept for it.
  const line = decisionLine(outcome, card);
  const room = Math.floor((DECISION_ROOM - 8) / 2);
  const shown = clip(line, room);
  return `${cardText(card)}\n\n**${escapeMarkdown(shown)}**`;
}

/** One action row: Approve (green) and Deny (red) — Keep and Discard on a memory card — each carrying the approval id and its decision. */
export function cardButtons(approvalId: string, labels = buttonLabels({})): ActionRow[] {
  return [
    {
      type: ACTION_ROW,
      components: [
        { type: BUTTON, style: SUCCESS, label: labels.approve, custom_id: approvalCustomId(approvalId, 'approved') },
        { type: BUTTON, style: DANGER, label: labels.deny, custom_id: approvalCustomId(approvalId, 'denied') },
      ],
    },
  ];
}

/**
 * The approval card, with Approve / Deny buttons the gateway decides. Always a channel message
 * (it is edited when the run resumes, which may be past a slash command's 15-minute token): a
 * reply to the user's message for a mention or DM, a message in the command's channel for a
 * slash command. Its nonce comes from the approval id, so a resend returns the card already
 * posted. It pings no one.
 */
export async function postCard(w: DiscordWriter, to: InboundMessage, card: ApprovalCard): Promise<string> {
  const body: Record<string, unknown> = {
    content: cardText(card),
    components: cardButtons(card.id, buttonLabels(card)),
    allowed_mentions: NO_PINGS,
    nonce: cardNonce(card.id),
    enforce_nonce: true,
    ...quietReply(to),
    ...w.created('card'),
  };
  const posted = await w.write<Posted>(to.conversation, 'POST', `/channels/${to.conversation}/messages`, { body, idempotent: true });
  return posted.id;
}

/**
 * The decided card: the same text plus the decision, without its buttons. The gateway's answer
 * to the click (UPDATE_MESSAGE) shows the same text already, so this edit is idempotent: it
 * settles the card whichever of the two lands first, and shows an expiry or a /stop. A card
 * someone deleted stays deleted.
 */
export async function settleCard(w: DiscordWriter, to: InboundMessage, messageId: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void> {
  try {
    await w.write(to.conversation, 'PATCH', `/channels/${to.conversation}/messages/${messageId}`, {
      body: { content: decidedText(card, outcome), components: [], allowed_mentions: NO_PINGS, ...w.edited('card') },
    });
  } catch (err) {
    if (!(err instanceof DiscordApiError && err.status === 404)) throw err;
  }
}
