import type { ChatMessage } from '../agent/types.js';
import { formatBytes } from '../lib/text.js';
import type { Attachment, InboundMessage, ScheduledMark } from '../channels/types.js';
import type { SavedAttachment } from './attachments.js';
import type { ShownImage } from './images.js';
import { describeTime } from '../schedules/when.js';

/** A message that has started this many runs without being committed is given up on. */
export const MAX_CLAIMS = 3;

export interface ClaimedMessage {
  message: InboundMessage;
  raw: string;
  /** Runs that have started with it at the head of the inbox, this one included (0 when not the head). */
  claims: number;
}

export type Turn =
  | { kind: 'agent'; taken: ClaimedMessage[] }
  | { kind: 'reset'; taken: ClaimedMessage[] }
  | { kind: 'crashed'; taken: ClaimedMessage[] };

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

/**
 * The user message the model sees for one inbound message, naming where its attachments were
 * saved; with `images` (MODEL_VISION) the pictures follow the text as image parts.
 */
export function toUserMessage(
  message: InboundMessage,
  saved: ReadonlyMap<Attachment, SavedAttachment> = new Map(),
  images: ReadonlyMap<Attachment, ShownImage> = new Map(),
): ChatMessage {
  const pictures: string[] = [];
  const files = message.attachments.map((a) => {
    const size = a.size === undefined ? '' : ` (${formatBytes(a.size)})`;
    const where = saved.get(a);
    if (!where) return `- ${a.name}${size}`;
    if (!('path' in where)) return `- ${a.name}${size}: not saved, ${where.error}`;
    const image = images.get(a);
    if (!image) return `- ${where.path}${size}`;
    if ('notShown' in image) return `- ${where.path}${size}: ${image.notShown}, not shown to you`;
    pictures.push(image.dataUrl);
    return `- ${where.path}${size}: image ${pictures.length} below`;
  });
  const text = message.scheduled ? `${scheduledPreamble(message.scheduled)}\n\n${message.text}` : message.text;
  const content = files.length ? `${text}\n\n[Attached files, in the workspace:]\n${files.join('\n')}` : text;
  if (pictures.length === 0) return { role: 'user', content };
  return { role: 'user', content: [{ type: 'text', text: content }, ...pictures.map((url) => ({ type: 'image_url' as const, image_url: { url } }))] };
}

/** What the model is told of a scheduled turn: nobody wrote this just now, and what it may not do. */
function scheduledPreamble(mark: ScheduledMark): string {
  return `[Scheduled task "${mark.name}" (${mark.id}), firing of ${describeTime(mark.firedAt, mark.tz)}. Nobody is waiting in the chat: your answer is posted to the conversation. A scheduled run cannot create schedules or wait for approvals.]`;
}
