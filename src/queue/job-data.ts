import type { InboundMessage } from '../channels/types.js';
import type { FailureReason, TokenUsage } from '../agent/types.js';

/** Job data: plain, versioned JSON. The inbox is the source of truth; `messages` shows what the run took. */
export interface RunJobData {
  v: 1;
  session: string;
  /** The message whose arrival added this job (for the dashboard). */
  trigger?: InboundMessage;
  /** Filled in when the run claims its turn: the message(s) it answers. */
  messages?: InboundMessage[];
  /** The run that took them (its record is at /admin/runs/<runId>). */
  runId?: string;
  /** The agent that answers (AGENTS_CONFIG), filled in with the messages. */
  agent?: string;
}

/**
 * How a run ended: the one outcome type. It is the job's return value (completed) — or, for a
 * failed run, logged and carried in the failure reason; the run record (run/record.ts) and the
 * session's last run (LastRun, for /status) are views of it, built by run/outcome.ts.
 */
export interface RunResult {
  runId: string;
  session: string;
  /** The agent that ran the turn (absent on a skipped job). */
  agent?: string;
  state: 'completed' | 'failed' | 'cancelled' | 'skipped';
  reason?: FailureReason | 'session_busy' | 'inbox_empty';
  detail?: string;
  messageIds: string[];
  steps: number;
  modelCalls: number;
  toolCalls: number;
  usage: TokenUsage;
  /** Platform ids of the posted reply. */
  delivered: string[];
  /** The platform refused the reply for good (chat gone, bot blocked): why. */
  undeliverable?: string;
  ms: number;
}

/** What /status shows of a session's last run: written with the commit, before the reply is delivered. */
export type LastRun = Pick<RunResult, 'runId' | 'state' | 'reason' | 'messageIds' | 'steps' | 'toolCalls' | 'agent'> & { at: number };

const PREVIEW_WORDS = 8;

/** A readable job name for the dashboard: platform, conversation, first words. */
export function jobName(message: InboundMessage): string {
  const words = message.text.trim().split(/\s+/).slice(0, PREVIEW_WORDS).join(' ');
  const more = message.text.trim().split(/\s+/).length > PREVIEW_WORDS ? '…' : '';
  const where = message.thread ? `${message.conversation}/${message.thread}` : message.conversation;
  const what = message.command ? `/${message.command}` : `${words}${more}`;
  return message.scheduled ? `scheduled ${message.scheduled.id} · ${message.platform} ${where}: ${what}` : `${message.platform} ${where}: ${what}`;
}

/**
 * A message as the dashboard and run records show it: platform credentials that ride along for
 * the reply (a Discord interaction token) are blanked. The worker replies from the inbox copy.
 */
export function forDisplay(message: InboundMessage): InboundMessage {
  if (!message.meta) return message;
  const meta = Object.fromEntries(Object.entries(message.meta).map(([k, v]) => [k, /token|secret|password/i.test(k) ? '[redacted]' : v]));
  return { ...message, meta };
}
