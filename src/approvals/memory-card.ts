import { cardOf } from '../channels/kit/approval-card.js';
import { sessionKeyOf } from '../channels/session-key.js';
import type { InboundMessage, OutboundAdapter } from '../channels/types.js';
import type { MemoryEntry } from '../memory/entry.js';
import type { MemoryOwner } from '../memory/store.js';
import type { ApprovalDesk, ApprovalRecord } from './desk.js';

/**
 * Asks the person whose turn `to` is whether to keep a pending memory entry: opens its record and
 * posts "Remember this?" with Keep / Discard where the turn came from, recording the card's
 * message so the gateway can edit it when they decide. The run does not wait. On a platform that
 * cannot show buttons nothing is opened (undefined): the entry stays pending, never used, and
 * /memory lists it. A failed post throws (the record, never shown, expires by itself).
 */
export async function postMemoryCard(
  desk: ApprovalDesk,
  out: OutboundAdapter,
  to: InboundMessage,
  entry: Pick<MemoryEntry, 'id' | 'text'>,
  who: MemoryOwner,
): Promise<ApprovalRecord | undefined> {
  if (!out.approvalCard) return undefined;
  const record = await desk.openMemoryCard({
    session: sessionKeyOf(to),
    platform: to.platform,
    conversation: to.conversation,
    requester: to.sender.id,
    requesterName: to.sender.name ?? to.sender.id,
    who,
    entry,
  });
  const messageId = await out.approvalCard(to, cardOf(record));
  await desk.cardPosted(record.id, messageId);
  return { ...record, messageId };
}
