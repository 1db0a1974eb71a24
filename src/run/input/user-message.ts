import type { ChatMessage } from '../../agent/types.js';
import type { Attachment, InboundMessage, ScheduledMark } from '../../channels/types.js';
import { formatBytes } from '../../lib/text.js';
import { describeTime } from '../../schedules/when.js';
import type { SavedAttachment } from '../../session/journal.js';
import type { ShownImage } from './images.js';

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
