import type { InboundMessage, OutboundAdapter } from '../channels/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { ScheduleBook } from './schedule-book.js';
import { PAUSE_AFTER_FAILURES, type Verdict } from './schedule-store.js';

export interface ScheduledRunEnd {
  state: 'completed' | 'failed' | 'cancelled';
  reason?: string;
  /** The platform refused the reply for good. */
  undeliverable?: string;
}

export function pausedNotice(name: string, id: string): string {
  return `I paused the schedule "${name}" (${id}): its last ${PAUSE_AFTER_FAILURES} firings failed. It will not fire again unless an operator resumes it; ask me to schedule it anew if you still want it.`;
}

/**
 * Counts how a scheduled turn ended (called once, by the run that committed it) toward its schedule (once per firing), and pauses a schedule
 * whose last firings all failed, telling its conversation once. Never throws: the run has ended
 * and been delivered; a failure here is logged.
 */
export async function recordScheduledRun(
  book: ScheduleBook,
  message: InboundMessage,
  end: ScheduledRunEnd,
  out: OutboundAdapter,
  log: Logger,
  metrics?: Metrics,
): Promise<void> {
  const mark = message.scheduled;
  if (!mark) return;
  const outcome = end.undeliverable !== undefined ? 'undeliverable' : end.state;
  const verdict: Verdict = outcome === 'completed' ? 'ok' : outcome === 'cancelled' ? 'neutral' : 'failed';
  metrics?.scheduleFirings.inc({ outcome });
  try {
    const counted = await book.store.outcome(mark.id, message.id, verdict, end.reason ? `${outcome}: ${end.reason}` : outcome, Date.now());
    if (counted !== 'paused') return;
    await book.pause(mark.id, 'failures');
    log.warn({ scheduleId: mark.id, failures: PAUSE_AFTER_FAILURES }, 'schedule paused after failed firings');
    if (end.undeliverable === undefined) await out.post(message, pausedNotice(mark.name, mark.id), 'notice');
  } catch (err) {
    log.warn({ err, scheduleId: mark.id }, 'could not record the scheduled run on its schedule');
  }
}
