import { buttonLabels, cardFooter, cardSubject, decisionLine } from '../kit/approval-card.js';
import type { ApprovalCard, ApprovalOutcome, InboundMessage } from '../types.js';
import { approvalData } from './approval-data.js';
import { classifyTelegramError } from './errors.js';
import { escapeHtml } from './format.js';
import { chatIdOf } from './ids.js';
import { placement, type TelegramWriter } from './writer.js';

/** The card: the exact call in a code block, who asked, and an inline keyboard whose presses the gateway decides. */
export async function postApprovalCard(w: TelegramWriter, to: InboundMessage, card: ApprovalCard): Promise<string> {
  const chatId = chatIdOf(to);
  const labels = buttonLabels(card);
  const message = await w.paced(
    chatId,
    'sendMessage',
    () =>
      w.api.sendMessage(chatId, approvalHtml(card), {
        parse_mode: 'HTML',
        reply_markup: {
          inline_keyboard: [
            [
              { text: labels.approve, callback_data: approvalData(card.id, 'approved') },
              { text: labels.deny, callback_data: approvalData(card.id, 'denied') },
            ],
          ],
        },
        ...placement(to, true),
        ...w.previews('card'),
      }),
    { idempotent: false },
  );
  return String(message.message_id);
}

/** The decided card: the same text and the decision, without its buttons. */
export async function editApprovalDecided(
  w: TelegramWriter,
  to: InboundMessage,
  messageId: string,
  card: ApprovalCard,
  outcome: ApprovalOutcome,
): Promise<void> {
  const chatId = chatIdOf(to);
  const text = `${approvalHtml(card)}\n\n${escapeHtml(decisionLine(outcome, card))}`;
  try {
    await w.paced(chatId, 'editMessageText', () => w.api.editMessageText(chatId, Number(messageId), text, { parse_mode: 'HTML', ...w.previews('card') }), {
      idempotent: true,
      maxWaitMs: 60_000,
    });
  } catch (err) {
    if (classifyTelegramError(err).kind !== 'not_modified') throw err;
  }
}

/** The card's question, the call in a code block (clipped to fit one message), and who asked. */
function approvalHtml(card: ApprovalCard): string {
  const { label, code } = cardSubject(card);
  const shown = code.length > 3_000 ? `${code.slice(0, 3_000)}\n… (${code.length - 3_000} more characters)` : code;
  return `<b>${escapeHtml(label)}</b>\n<pre>${escapeHtml(shown)}</pre>\n${escapeHtml(cardFooter(card))}`;
}
