import type { InboundMessage, OutboundAdapter, DeliveredOutcome } from '../channels/types.js';
import type { Logger } from '../log.js';

/**
 * A reply the run committed and must deliver: written in the same script that consumed the
 * messages, so a worker that dies after the commit leaves it for the next run of the session
 * instead of losing it (and the messages are never answered twice by a re-run).
 */
export interface OutboxRecord {
  v: 1;
  runId: string;
  session: string;
  /** The message the reply answers (the last one of the turn): where to post. */
  to: InboundMessage;
  state: DeliveredOutcome['state'];
  reason?: string;
  /** The answer, or the honest line. */
  text: string;
  messageIds: string[];
  /** The run's status message, removed once the reply is out. */
  statusMessageId?: string;
}

/** Posts the reply, then tidies the status message and tells the adapter the run ended. Returns the posted ids. */
export async function deliverReply(out: OutboundAdapter, record: OutboxRecord, log: Logger): Promise<string[]> {
  const kind = record.state === 'completed' ? 'answer' : 'notice';
  const posted = await out.post(record.to, record.text, kind);
  if (record.statusMessageId !== undefined && out.remove) {
    await out.remove(record.to, record.statusMessageId).catch((err: unknown) => log.warn({ err }, 'could not remove the status message'));
  }
  const outcome: DeliveredOutcome = { runId: record.runId, state: record.state, messageIds: record.messageIds };
  if (record.reason !== undefined) outcome.reason = record.reason;
  await out.ended?.(record.to, outcome);
  return posted;
}
