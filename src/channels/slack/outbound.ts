import type { Redis } from 'ioredis';
import type { Logger as SlackLogger, WebClient } from '@slack/web-api';
import type { Logger } from '../../log.js';
import type {
  ApprovalCard,
  ApprovalOutcome,
  Attachment,
  DeliveredOutcome,
  InboundMessage,
  OutboundAdapter,
  OutgoingFile,
  PostKind,
  StreamShown,
} from '../types.js';
import { memoryLedger, sendPieces, type PieceLedger, type WriteFailure } from '../kit/pieces.js';
import { clip } from '../../lib/text.js';
import { apiBase, createWebClient } from './api.js';
import { SlackWriter } from './writer.js';
import { SlackRefused, slackWriteFailure } from './errors.js';
import { postCard, settleCard } from './approval-card.js';
import { SlackReactions } from './reactions.js';
import { downloadSlackFile } from './download.js';
import { slackLogger } from './logger.js';
import { escapePlain, slackPieces, statusText } from './format.js';
import { engagedThreadKey, isDirect } from './ids.js';
import { SLACK_UPLOAD_MAX_BYTES, uploadFile } from './upload.js';
import { SlackStreams, STREAM_INTERVAL_MS } from './stream.js';
import { findPiece, pieceMetadata } from './find-piece.js';

export interface SlackOutboundOptions {
  token: string;
  apiUrl: string | undefined;
  redis: Redis;
  /** Hash-tagged prefix for the channel's Redis keys. */
  prefix: string;
  log: Logger;
  /** LINK_PREVIEWS: answers may unfurl (default: no message does; see ../kit/link-previews.ts). */
  linkPreviews?: boolean;
  /** Test seam: the clock the pacer reads. */
  now?: () => number;
}

/** How long a thread the bot answered in accepts follow-ups without a mention. */
export const ENGAGED_TTL_SECONDS = 7 * 24 * 3600;
const QUESTION_PREVIEW = 300;
/** chat.postMessage's recommended most characters of `text` (Slack truncates past 40,000; 4,000 is where it advises stopping). */
const SLACK_TEXT_LIMIT = 4_000;

/**
 * The Slack outbound half over the plain Web API (works in any worker). Answers go in the
 * thread of the message they answer (DMs: top level unless the user threaded); the status
 * message is edited with chat.update; the user's message gets an eyes reaction while the run
 * works (Slack has no bot typing indicator) that becomes a check or a warning at the end.
 */
export class SlackOutbound implements OutboundAdapter {
  readonly platform = 'slack';
  readonly editIntervalMs = 1_000;
  /** `typing` adds the acknowledgement reaction once per message; the refresh only re-checks that. */
  readonly typingIntervalMs = 60_000;
  readonly uploadMaxBytes = SLACK_UPLOAD_MAX_BYTES;
  private readonly client: WebClient;
  private readonly sdkLog: SlackLogger;
  private readonly base: string;
  private readonly reactions: SlackReactions;
  private readonly streams: SlackStreams;
  /** Every message write of this adapter waits for its conversation's turn here (reactions are no messages). */
  private readonly w: SlackWriter;

  constructor(private readonly options: SlackOutboundOptions) {
    this.base = apiBase(options.apiUrl);
    this.sdkLog = slackLogger(options.log);
    this.client = createWebClient(options.token, options.apiUrl, this.sdkLog);
    this.w = new SlackWriter(this.client, options.log, options.linkPreviews === true, options.now);
    this.reactions = new SlackReactions(this.client, options.log);
    this.streams = new SlackStreams(this.w, options.linkPreviews === true);
  }

  async post(to: InboundMessage, text: string, kind: PostKind, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    if (kind === 'status') return [await this.w.postMessage(to, statusText(text), 'status')];
    const pieces = answerPieces(to, text);
    const ids = await sendPieces(pieces, ledger, {
      classify: slackWriteFailure,
      limit: SLACK_TEXT_LIMIT,
      send: (text, i) => this.postPiece(to, text, i, pieces),
      find: (piece, i) => findPiece(this.client, this.options.log, to, piece, i),
    });
    if (kind === 'answer') await this.markAnswered(to);
    this.options.log.info({ channel: to.conversation, thread: to.thread, kind, pieces: ids.length }, 'posted');
    return ids;
  }

  streamIntervalMs(to: InboundMessage): number {
    return Math.max(STREAM_INTERVAL_MS, this.w.waitMs(to.conversation));
  }

  /**
   * The answer so far, live: appended to a native Slack stream in the thread (chat.startStream /
   * chat.appendStream), or, where Slack cannot stream, posted and rewritten with chat.update as
   * escaped plain text with a "still writing" mark; a new message past STREAM_SEGMENT_LIMIT.
   * See stream.ts.
   */
  async streamAnswer(to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
    return this.streams.show(to, text, shown, askedPrefix(to));
  }

  /**
   * The final answer in the streamed messages, each write on the conversation's turn (a 429's
   * hold of the stream waited out first): their streams stopped (chat.stopStream), piece i formatted as `post` formats it put into streamed
   * message i (chat.update, repeatable), pieces past them posted, streamed messages left over deleted.
   */
  async finishStream(to: InboundMessage, shown: StreamShown, text: string, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    const pieces = answerPieces(to, text);
    const streamed = shown.ids;
    await this.streams.stopAll(to, streamed);
    const ids = await sendPieces(pieces, ledger, {
      classify: slackWriteFailure,
      limit: SLACK_TEXT_LIMIT,
      resendable: (i) => i < streamed.length,
      send: async (piece, i) => {
        const id = streamed[i];
        if (id === undefined) return this.postPiece(to, piece, i, pieces);
        await this.streams.replace(to, id, piece);
        return id;
      },
      find: (piece, i) => findPiece(this.client, this.options.log, to, piece, i),
    });
    for (const extra of streamed.slice(pieces.length)) await this.removeLeftover(to, extra);
    this.streams.forget(to, streamed);
    await this.markAnswered(to);
    this.options.log.info({ channel: to.conversation, thread: to.thread, streamed: streamed.length, pieces: ids.length }, 'streamed answer finished');
    return ids;
  }

  classifyWriteError(err: unknown): WriteFailure {
    return slackWriteFailure(err);
  }

  async edit(to: InboundMessage, messageId: string, text: string): Promise<void> {
    await this.w.write(to.conversation, 'chat.update', () => this.client.chat.update({ channel: to.conversation, ts: messageId, text: statusText(text) }), {
      idempotent: true,
    });
  }

  async remove(to: InboundMessage, messageId: string): Promise<void> {
    try {
      await this.w.write(to.conversation, 'chat.delete', () => this.client.chat.delete({ channel: to.conversation, ts: messageId }), { idempotent: true });
    } catch (err) {
      if (!(err instanceof SlackRefused && err.code === 'message_not_found')) throw err;
    }
  }

  /** The acknowledgement reaction on the user's message, added once. */
  typing(to: InboundMessage): Promise<void> {
    return this.reactions.typing(to);
  }

  /** Turns "eyes" into a check or a warning on the answered message(s). Never throws: the reply is already out. */
  ended(to: InboundMessage, outcome: DeliveredOutcome): Promise<void> {
    return this.reactions.ended(to, outcome);
  }

  approvalCard(to: InboundMessage, card: ApprovalCard): Promise<string> {
    return postCard(this.w, to, card);
  }

  approvalDecided(to: InboundMessage, messageId: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void> {
    return settleCard(this.w, to, messageId, card, outcome);
  }

  /** A message only `user` sees, in `channel` (and in `thread`): the answer to a button click. */
  async ephemeral(channel: string, user: string, text: string, thread?: string): Promise<void> {
    await this.w.write(
      channel,
      'chat.postEphemeral',
      () => this.client.chat.postEphemeral({ channel, user, text, ...(thread !== undefined && { thread_ts: thread }) }),
      { idempotent: false },
    );
  }

  async download(attachment: Attachment, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
    return downloadSlackFile(attachment, this.options.token, this.base, maxBytes, signal);
  }

  /** A workspace file where the answer goes (see upload.ts). */
  upload(to: InboundMessage, file: OutgoingFile, signal: AbortSignal): Promise<string> {
    return uploadFile(this.w, { token: this.options.token, apiUrl: this.options.apiUrl, base: this.base, sdkLog: this.sdkLog }, to, file, signal);
  }

  /** Piece `i` of a reply (`text`: it as sent now, with the may-repeat note or not), named in its metadata for `find`. */
  private postPiece(to: InboundMessage, text: string, i: number, pieces: readonly string[]): Promise<string> {
    return this.w.postMessage(to, text, 'answer', { metadata: pieceMetadata(to, i, pieces[i] ?? text) });
  }

  /** A streamed message the final answer does not need. Slack refusing its deletion for good does not fail the delivery: the answer is out. */
  private async removeLeftover(to: InboundMessage, ts: string): Promise<void> {
    try {
      await this.streams.delete(to, ts);
    } catch (err) {
      if (slackWriteFailure(err) !== 'refused') throw err;
      this.options.log.warn({ err, channel: to.conversation, ts }, 'could not remove a streamed message left over');
    }
  }

  /** A channel thread the bot answered in takes follow-ups without a mention (see ENGAGED_TTL_SECONDS). */
  private async markAnswered(to: InboundMessage): Promise<void> {
    if (to.thread === undefined || isDirect(to.conversation)) return;
    await this.options.redis
      .set(engagedThreadKey(this.options.prefix, to.conversation, to.thread), '1', 'EX', ENGAGED_TTL_SECONDS)
      .catch((err: unknown) => this.options.log.warn({ err }, 'could not mark the thread as answered'));
  }
}

/** An answer as `post` sends it: mrkdwn pieces, the first led by the /ask line. */
function answerPieces(to: InboundMessage, text: string): string[] {
  const pieces = slackPieces(text);
  if (pieces.length === 0) pieces.push('(empty answer)');
  const prefix = askedPrefix(to);
  if (prefix) pieces[0] = `${prefix}${pieces[0]}`;
  return pieces;
}

/** What leads an /ask answer (and its streamed first message), or ''. */
function askedPrefix(to: InboundMessage): string {
  return to.meta?.via === 'ask' && to.meta.user ? `${askedLine(to.meta.user, to.text)}\n\n` : '';
}

/** The first line of an /ask answer: the question is not visible in the channel otherwise. */
function askedLine(user: string, question: string): string {
  return `<@${user}> asked: ${escapePlain(clip(question, QUESTION_PREVIEW).replace(/\s+/g, ' '))}`;
}
