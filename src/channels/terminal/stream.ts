import { RedisKeys } from '../../queue/keys.js';
import type { ApprovalCard, ApprovalOutcome, DeliveredOutcome, PostKind } from '../types.js';

/**
 * The terminal channel's outbound path: the worker appends events to a Redis stream per
 * terminal session and the chat process reads them, so a chat in one process works with workers
 * anywhere. A stream, not pub/sub: an event written before the reader looked is not lost.
 */
export type TerminalEvent =
  | { type: 'progress'; to: string; line: string }
  | { type: 'post'; to: string; kind: PostKind; text: string }
  /** A file the agent sent (send_file): the chat prints where it is, nothing is copied. */
  | { type: 'file'; to: string; path: string; absolutePath: string; size: number; caption?: string }
  | { type: 'ended'; to: string; outcome: DeliveredOutcome }
  | { type: 'approval'; to: string; card: ApprovalCard }
  | { type: 'approval_decided'; to: string; card: ApprovalCard; outcome: ApprovalOutcome };

export const terminalStreamKey = (prefix: string, conversation: string) => new RedisKeys(prefix).terminalStream(conversation);

/** Events kept per terminal session stream. */
export const STREAM_MAXLEN = 1_000;
