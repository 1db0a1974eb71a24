import { RunSuspended } from '../../agent/suspend.js';
import type { InboundMessage, OutboundAdapter, DeliveredOutcome } from '../../channels/types.js';
import type { Logger } from '../../log.js';
import { memoryLedger, type PieceLedger } from '../../channels/kit/pieces.js';
import type { StreamedAnswer } from './answer-stream.js';
import { honestLine } from './honest-line.js';
import type { FailureReason } from '../../agent/types.js';

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
  /** The messages the answer was streamed into (STREAM_ANSWERS): the reply is put into them, not posted again. */
  streamed?: StreamedAnswer;
}

export interface DeliveryReport {
  /** Platform ids of the pieces known posted, in order. */
  posted: string[];
  /** Set when the platform refused the reply for good: it is settled as undeliverable. */
  undeliverable?: string;
}

/** Marks a streamed answer a run did not finish; the honest line follows it. */
export const INCOMPLETE_MARK = '_(incomplete: the answer stops here)_';

/**
 * The reply as new messages, or in the messages it was streamed into: the final answer edits
 * them; a run that stopped after text was streamed keeps that text, marked incomplete, with the
 * honest line after it (in the same messages, so the ledger counts one delivery).
 */
function postReply(out: OutboundAdapter, record: OutboxRecord, kind: 'answer' | 'notice', ledger: PieceLedger): Promise<string[]> {
  const { streamed } = record;
  if (!streamed || !out.finishStream) return out.post(record.to, record.text, kind, ledger);
  const text = record.state === 'completed' ? record.text : `${streamed.text.trimEnd()} …\n\n${INCOMPLETE_MARK}\n\n${record.text}`;
  return out.finishStream(record.to, streamed.shown, text, ledger);
}

/**
 * Posts the reply through the ledger (only the pieces not known posted), then tidies the status
 * message and tells the adapter the run ended. A refusal for good (chat gone, bot blocked) is
 * reported, not thrown: nothing more can be done for this reply, and it must not hold its
 * session. Anything else is thrown, and the delivery is tried again later with the same ledger.
 */
export async function deliverReply(out: OutboundAdapter, record: OutboxRecord, log: Logger, ledger: PieceLedger = memoryLedger()): Promise<DeliveryReport> {
  const kind = record.state === 'completed' ? 'answer' : 'notice';
  let report: DeliveryReport;
  try {
    report = { posted: await postReply(out, record, kind, ledger) };
  } catch (err) {
    if (err instanceof RunSuspended || out.classifyWriteError(err) !== 'refused') throw err;
    log.warn({ err, run: record.runId }, 'the platform refused the reply for good; settled as undeliverable');
    report = { posted: [], undeliverable: err instanceof Error ? err.message : String(err) };
  }
  if (record.statusMessageId !== undefined && out.remove) {
    await out.remove(record.to, record.statusMessageId).catch((err: unknown) => log.warn({ err }, 'could not remove the status message'));
  }
  if (report.undeliverable !== undefined) return report;
  const outcome: DeliveredOutcome = { runId: record.runId, state: record.state, messageIds: record.messageIds };
  if (record.reason !== undefined) outcome.reason = record.reason;
  if (record.state !== 'completed') outcome.line = honestLine(record.reason as FailureReason | undefined);
  await out.ended?.(record.to, outcome);
  return report;
}
