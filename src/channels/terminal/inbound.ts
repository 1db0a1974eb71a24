import { randomUUID } from 'node:crypto';
import type { InboundMessage } from '../types.js';

/** A line typed in the terminal, as the normalised message every channel produces. */
export function terminalMessage(session: string, text: string, user: string, now = Date.now()): InboundMessage {
  const id = randomUUID();
  const message: InboundMessage = {
    v: 1,
    id,
    platform: 'terminal',
    conversation: session,
    sender: { id: user, name: user },
    text: text.trim(),
    attachments: [],
    eventId: id,
    receivedAt: now,
  };
  return message;
}
