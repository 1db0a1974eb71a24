import type { Express } from 'express';
import type { Redis } from 'ioredis';
import type { Config } from '../config/config.js';
import type { Logger } from '../log.js';
import type { PieceLedger, WriteFailure } from './kit/pieces.js';
import type { CommandName } from './commands.js';

/**
 * The channel adapter contract: two halves behind one small interface.
 *
 * Inbound turns a platform event into one `InboundMessage` (plain, versioned JSON: it is the
 * BullMQ job's data and the session inbox entry; never an SDK object). Outbound posts, edits and
 * shows typing through plain HTTP (or Redis, for the terminal) so it works in a worker process
 * that holds no gateway connection.
 */

export interface Attachment {
  name: string;
  /** Where the worker can fetch it (a platform file URL or file id); the adapter knows how. */
  ref: string;
  size?: number;
  mime?: string;
}

export interface InboundMessage {
  v: 1;
  /** Our id for this message (unique). */
  id: string;
  /** 'terminal' | 'telegram' | 'slack' | 'discord' */
  platform: string;
  /** Chat / channel / DM channel id. */
  conversation: string;
  /** Thread or topic id when it is a session of its own. */
  thread?: string;
  /** `handle`: a username an allowlist may name (Telegram's @username, lowercase, without @). */
  /** `foreign`: from another organisation than the one the bot is installed in (a Slack Connect channel); a place never vouches for them. */
  sender: { id: string; name?: string; handle?: string; foreign?: true };
  /**
   * Where it was said, for access control (access/policy.ts): a DM with the bot, or a group with
   * the ids an ALLOWED_CHANNELS entry may name (the channel, a thread's parent channel, the guild).
   * Absent (the terminal chat, operator messages): the platform's rules decide, a DM by default.
   */
  where?: { kind: 'dm' } | { kind: 'group'; ids: string[] };
  /** The user's text without the bot mention. */
  text: string;
  attachments: Attachment[];
  /** The platform's own id for the event (update_id, event_id, message id): de-duplication key. */
  eventId: string;
  /** When the gateway received it, ms since the epoch. */
  receivedAt: number;
  /** The platform message id to reply to (the user's message). */
  replyTo?: string;
  /** A control message, handled in order with the session's other messages. */
  command?: 'reset';
  /**
   * A turn asked by a schedule (src/schedules), not by a person writing now: answered where the
   * schedule was made, as its own turn, with no approvals (nobody is there to click) and no new schedules.
   */
  scheduled?: ScheduledMark;
  /** Platform details the outbound half needs to reply (e.g. an interaction token). */
  meta?: Record<string, string>;
  /** An answer at once (a command's) reaches only the sender here, in a group too: Slack's /ask (ephemeral), a Discord slash command. */
  privateReply?: true;
}

export interface ScheduledMark {
  id: string;
  name: string;
  /** The firing time it stands for (ms since the epoch): one turn per firing. */
  firedAt: number;
  tz: string;
}

/** A tool call waiting for a click, as its card shows it. */
export interface ApprovalCard {
  /** The approval's id: what the buttons carry back. */
  id: string;
  /** `memory`: "Remember this?" with Keep / Discard, for a memory written in a turn that read tool results (no run waits for it). */
  kind?: 'memory';
  tool: string;
  /** The call's arguments exactly as the model sent them (JSON); a memory card's is `{"text": …}`. */
  args: string;
  /** Who asked (the sender of the message that started the run); a memory card's: whose memory it is. */
  requester: string;
  expiresAt: number;
}

export interface ApprovalOutcome {
  decision: 'approved' | 'denied' | 'expired' | 'cancelled';
  by: string;
  at: number;
}

/** A workspace file the agent hands back into the conversation (the send_file tool). */
export interface OutgoingFile {
  /** The name it is shown under (the workspace file's base name). */
  name: string;
  /** Its path in the session's workspace, as the model named it (the terminal shows this instead of uploading). */
  path: string;
  /** Where the worker has it (the terminal chat, on the worker's machine, prints this). */
  absolutePath: string;
  size: number;
  /** From the file name's extension; application/octet-stream when unknown. */
  mime: string;
  /** Plain text shown with the file (at most CAPTION_MAX_CHARS). */
  caption?: string;
  /** The file's content, read only by a platform that uploads it. */
  read(): Promise<Uint8Array>;
}

/** Fits every platform's caption (Telegram's 1,024 is the smallest). */
export const CAPTION_MAX_CHARS = 1000;

/** The messages a streamed answer is shown in so far, in order, with the text each shows. */
export interface StreamShown {
  ids: string[];
  texts: string[];
}

/** What a posted message is for: platforms place and notify differently (the terminal prints status to stderr). */
export type PostKind = 'status' | 'answer' | 'notice';

/** How a run ended, as the user is told and as the terminal channel exits. */
export interface DeliveredOutcome {
  runId: string;
  state: 'completed' | 'failed' | 'cancelled';
  reason?: string;
  /** The honest line the person read when the run did not complete (for an adapter that repeats it elsewhere). */
  line?: string;
  /** Ids of the messages this run answered. */
  messageIds: string[];
}

export interface OutboundAdapter {
  readonly platform: string;
  /** Minimum time between two edits of one status message. */
  readonly editIntervalMs: number;
  /** How often a typing indicator must be refreshed; absent when the platform has none. */
  readonly typingIntervalMs?: number;
  /**
   * Posts a new message where `to` came from (thread / reply position); formats and splits.
   * Each piece goes through `ledger` (delivery/pieces.ts sendPieces), so delivering the same
   * text again with the same ledger posts only what is not known posted. Returns the posted ids in order.
   */
  post(to: InboundMessage, text: string, kind: PostKind, ledger?: PieceLedger): Promise<string[]>;
  /** What a failed write of this platform means: refused for good, unknown outcome, or worth retrying. */
  classifyWriteError(err: unknown): WriteFailure;
  /** Replaces the text of a message this adapter posted. */
  edit(to: InboundMessage, messageId: string, text: string): Promise<void>;
  remove?(to: InboundMessage, messageId: string): Promise<void>;
  /** A native progress surface (one line at a time); when present, no status message is posted. */
  progress?(to: InboundMessage, line: string): Promise<void>;
  typing?(to: InboundMessage): Promise<void>;
  /**
   * Fetches an attachment of an inbound message (with the bot's credentials) so the worker can
   * save it in the session's workspace. Must refuse (throw) past `maxBytes` without reading on.
   */
  download?(attachment: Attachment, maxBytes: number, signal: AbortSignal): Promise<Uint8Array>;
  /** Least time between two writes of a streamed answer in this conversation (the platform's pacing). */
  streamIntervalMs?(to: InboundMessage): number;
  /**
   * Shows `text`, the answer so far (plain: it is formatted once it is final), in the messages
   * `shown` describes: edits the ones whose text changes and posts a new one past the platform's
   * length. Returns what is shown now; when pacing or a 429 says not yet, what was shown before
   * (the next write brings the newer text). Present together with `finishStream`.
   */
  streamAnswer?(to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown>;
  /**
   * Puts the final text into a streamed answer's messages, formatted and split as `post` does:
   * piece i edits streamed message i (edits can be repeated), pieces past them are posted,
   * streamed messages left over are removed. Through `ledger` like `post`. Returns the ids in order.
   */
  finishStream?(to: InboundMessage, shown: StreamShown, text: string, ledger?: PieceLedger): Promise<string[]>;
  /** The largest file `upload` takes, in bytes. Absent together with `upload`: no send_file on this platform. */
  readonly uploadMaxBytes?: number;
  /**
   * Posts a file (with its caption) where `to` came from, in its thread or topic; returns the
   * platform's message (or file) id. A failure is thrown as the platform's error, which
   * `classifyWriteError` reads: the tool never sends a file twice.
   */
  upload?(to: InboundMessage, file: OutgoingFile, signal: AbortSignal): Promise<string>;
  /** Posts an approval card with Approve / Deny buttons where `to` came from; returns its message id. Absent: the platform cannot ask. */
  approvalCard?(to: InboundMessage, card: ApprovalCard): Promise<string>;
  /** Shows the decision on a card this adapter posted, without its buttons. */
  approvalDecided?(to: InboundMessage, messageId: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void>;
  /** Called once when a run's reply was delivered (or its failure line was). */
  ended?(to: InboundMessage, outcome: DeliveredOutcome): Promise<void>;
}

/*
 * The contract between the roles and a platform channel module: what a module gets from the gateway
 * and a worker. The gateway's intake and approval desk are seen through narrow ports (the members
 * the channels call), so this file imports neither class back.
 */

/** Why a message is not let through. */
export type DenyReason = 'dm_disabled' | 'not_allowed' | 'pairing' | 'channel_not_allowed';

export type RefusalReason = DenyReason | 'rate_limited';

export type IntakeResult =
  | { kind: 'queued'; session: string }
  /** A redelivered event: already queued, or already answered at once. Nothing to do. */
  | { kind: 'duplicate'; session: string }
  /** A command answered at once; the channel shows `reply` the way its platform answers commands. */
  | { kind: 'command'; session: string; name: CommandName | 'unknown'; reply: string; ok: boolean }
  /** Not queued: access control, a limit or a full queue. `reply`, when present, is what the person is told. */
  | { kind: 'refused'; session: string; reason: RefusalReason | 'queue_full'; reply?: string };

/** What a channel uses of the intake (channels/intake.ts `Intake`). */
export interface ChannelIntake {
  /** `botName` lets a group command addressed to another bot (`/stop@other`) pass as plain text. */
  accept(message: InboundMessage, botName?: string): Promise<IntakeResult>;
  /**
   * True the first time this event is answered at once; false for a redelivery of it. Public for
   * a channel's own at-once answers (Telegram's "file too large"), so every one is kept in one place.
   */
  firstAnswer(message: Pick<InboundMessage, 'platform' | 'eventId'>): Promise<boolean>;
}

/** What a channel reads of an approval record (queue/approvals.ts `ApprovalRecord` has these and more). */
export interface ApprovalRecordView {
  id: string;
  /** `memory`: a memory card, decided by its requester alone and settled by the gateway (no run resumes for it). */
  kind?: 'memory';
  tool: string;
  args: string;
  requester: string;
  requesterName?: string;
  expiresAt: number;
  status: 'pending' | 'approved' | 'denied' | 'expired' | 'cancelled';
  /** Who decided (a display name or id), and when. */
  by?: string;
  at?: number;
  /** The card's message id, once it was posted and recorded (a memory card's: what the gateway edits). */
  messageId?: string;
}

/** A click's result; queue/approvals.ts `DecideResult` is this with its full record. */
export type ChannelDecideResult<R extends ApprovalRecordView = ApprovalRecordView> =
  | { kind: 'decided'; record: R }
  /** The card was decided already (a second click); nothing changed. */
  | { kind: 'already'; record: R }
  /** The clicker may not decide for this run; nothing changed. */
  | { kind: 'not_allowed'; record: R }
  /** The access gate refused the clicker (not listed, not paired, not of the workspace); nothing changed. */
  | { kind: 'no_access' }
  | { kind: 'unknown' };

/** Who clicked a card's button, and where: a click counts only in the chat the card is in. */
export interface ApprovalClicker {
  platform: string;
  userId: string;
  /** What the card shows as the decider. */
  name?: string;
  /** The conversation the click came from (InboundMessage.conversation's form: chat, channel or thread id). */
  chat: string;
  /** The clicker is from another organisation than the installation (Slack Connect). */
  foreign?: true;
}

/** What a channel uses of the approval desk (queue/approvals.ts `ApprovalDesk`, behind the access gate in the gateway). */
export interface ChannelApprovals {
  /** A click: access first (the gate), then whether this person may decide this call (APPROVAL_BY). */
  decide(id: string, decision: 'approved' | 'denied', clicker: ApprovalClicker): Promise<ChannelDecideResult>;
}

/** What a channel's gateway half may use. */
export interface GatewayContext {
  config: Config;
  intake: ChannelIntake;
  /** The gateway's HTTP app: webhook routes (Slack events, Telegram webhook) are mounted here before it listens. */
  app: Express;
  redis: Redis;
  /** Hash-tagged key prefix for the channel's own Redis keys (e.g. its de-duplication of redeliveries). */
  prefix: string;
  /** Where approval clicks are decided (a card's Approve / Deny buttons). */
  approvals: ChannelApprovals;
  log: Logger;
}

export interface ChannelHealth {
  /** Connected and receiving (polling, gateway or socket up; webhook registered). */
  connected: boolean;
  /** When the last event arrived, ms since the epoch. */
  lastEventAt?: number;
  /** Why it is not connected, for /readyz. */
  detail?: string;
}

/** A channel's running inbound half in the gateway. */
export interface InboundChannel {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  health(): ChannelHealth;
}

/** What a worker needs to build a channel's outbound half: plain HTTP to the platform, no gateway connection. */
export interface OutboundContext {
  config: Config;
  redis: Redis;
  log: Logger;
}

export interface ChannelModule {
  readonly name: string;
  inbound(ctx: GatewayContext): InboundChannel;
  outbound(ctx: OutboundContext): OutboundAdapter;
}
