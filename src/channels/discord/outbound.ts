import { sleep } from '../../lib/sleep.js';
import type { Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import type { FailureReason } from '../../agent/types.js';
import { splitMessage } from '../kit/chunk.js';
import { honestLine } from '../../run/delivery/honest-line.js';
import type { ApprovalCard, ApprovalOutcome, Attachment, DeliveredOutcome, InboundMessage, OutboundAdapter, OutgoingFile, PostKind, StreamShown } from '../types.js';
import { cardButtons, cardText, decidedText } from './approval-card.js';
import { downloadAttachment } from './download.js';
import { memoryLedger, sendPieces, type PieceLedger, type WriteFailure } from '../kit/pieces.js';
import { DiscordApiError, DiscordRateLimitError, discordWriteFailure, interactionGone, safeError, unknownMessage } from './errors.js';
import { fitStatus, toDiscordMarkdown } from './format.js';
import { cardNonce, interactionKey, interactionOf, MESSAGE_LIMIT, ORIGINAL, pieceNonce, tokenAlive, UPLOAD_MAX_BYTES, uploadNonce, type InteractionRef } from './ids.js';
import type { DiscordRest, RequestOptions, UploadPart } from './rest.js';
import { previewsAllowed, type PreviewKind } from '../kit/link-previews.js';
import { finalLayout, isStreamedId, parseStreamed, postedId, STREAM_INTERVAL_MS, StreamPacing, streamedId, streamLayout, streamNonce, type StreamedMessage } from './stream.js';

const EPHEMERAL = 1 << 6;
/** Message flag: Discord makes no embeds of the links in the message (it fetches every link it embeds). */
export const SUPPRESS_EMBEDS = 1 << 2;
/** A deferred response that still shows "is thinking…". */
const LOADING = 1 << 7;
/** Megabytes over a slow link take longer than the client's JSON timeout. */
const UPLOAD_TIMEOUT_MS = 120_000;
/** No @everyone, @here, role or user pings from anything the model writes. */
const NO_PINGS = { parse: [] as string[] };
/**
 * A streamed write does not wait: a 429 is not waited out (the next write brings newer text, and
 * the final delivery waits as long as Discord asks), a 5xx is tried once more, a hung request
 * gives up sooner than the client's default.
 */
const STREAM_WRITE: Pick<RequestOptions, 'retry' | 'timeoutMs'> = { retry: { maxRetryAfterMs: 0, attempts: 2 }, timeoutMs: 5_000 };
type WriteOptions = Pick<RequestOptions, 'retry' | 'timeoutMs'>;
/** The longest 429 hold the final answer waits out before writing (the REST client's own cap on a retry-after). */
const MAX_FINISH_HOLD_MS = 60_000;

export const FOLDED_NOTE = '↪ Answered together with the messages that came after this one (see below).';

/** What an earlier slash command of a folded turn shows once the turn has ended. */
export function foldedNote(outcome: Pick<DeliveredOutcome, 'state' | 'reason'>): string {
  if (outcome.state === 'completed') return FOLDED_NOTE;
  return `↪ Handled together with the messages that came after this one. ${honestLine(outcome.reason as FailureReason | undefined)}`;
}

interface Posted {
  id: string;
}

/** The interaction's webhook stopped taking messages at this piece. */
class InteractionGoneAt extends Error {
  constructor(readonly index: number) {
    super(`the interaction stopped taking messages at piece ${index}`);
  }
}

/**
 * A follow-up the webhook no longer knows (404 Unknown Message: someone deleted it). Not a
 * DiscordApiError, so it does not count as the whole interaction being gone.
 */
class FollowUpGone extends Error {
  constructor(cause: unknown) {
    super('the follow-up message no longer exists', { cause });
  }
}

/** What a streamed write is about to post: its place in the answer and where it goes. */
interface StreamPost {
  index: number;
  /** The stream shows in channel messages (its interaction gone, or none). */
  inChannel: boolean;
  /** The stream's first message (names the nonces of the others). */
  first: string | undefined;
  /** It replaces the interaction's deferred response. */
  original: boolean;
  /** The first channel message names the slash command's user. */
  names: boolean;
  write?: WriteOptions;
}

export interface DiscordOutboundOptions {
  rest: DiscordRest;
  log: Logger;
  /** Hosts attachments may be downloaded from. */
  downloadHosts: readonly string[];
  /** Where the gateway keeps slash commands' interactions (for a folded turn's earlier commands). */
  redis?: Redis;
  prefix?: string;
  now?: () => number;
  /** LINK_PREVIEWS: answers may show link embeds (default: no message does; see ../link-previews.ts). */
  linkPreviews?: boolean;
}

/**
 * Discord's outbound half, plain REST (works in a worker). A slash command is answered through
 * its interaction webhook: progress edits the deferred response, the answer replaces it (the rest
 * as follow-ups, in order), a failure is an ephemeral line. When the interaction token has expired
 * (15 minutes) or the webhook refuses it (401/404), the same text goes to the channel as normal
 * messages. A mention or DM is answered with replies to the user's message. A streamed answer
 * (STREAM_ANSWERS) is shown in those same messages while the model writes it, and finished in place.
 */
export class DiscordOutbound implements OutboundAdapter {
  readonly platform = 'discord';
  readonly editIntervalMs = 1_200;
  readonly typingIntervalMs = 8_000;
  private readonly rest: DiscordRest;
  private readonly log: Logger;
  private readonly hosts: readonly string[];
  private readonly redis: Redis | undefined;
  private readonly prefix: string;
  private readonly now: () => number;
  private readonly linkPreviews: boolean;
  /** Interactions whose webhook refused a call: not tried again (their messages go to the channel). */
  private readonly gone = new Set<string>();
  /**
   * Interactions whose deferred response shows a streamed answer (a step's text stays there when
   * the step goes on to tools): progress is not written over it, and later text goes to follow-ups.
   */
  private readonly heldOriginal = new Set<string>();
  private readonly pacing: StreamPacing;

  constructor(options: DiscordOutboundOptions) {
    this.rest = options.rest;
    this.log = options.log;
    this.hosts = options.downloadHosts;
    this.redis = options.redis;
    this.prefix = options.prefix ?? '';
    this.now = options.now ?? Date.now;
    this.linkPreviews = options.linkPreviews ?? false;
    this.pacing = new StreamPacing(this.now);
  }

  async post(to: InboundMessage, text: string, kind: PostKind, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    const ref = interactionOf(to);
    if (ref && this.usable(ref)) {
      const posted = await this.postToInteraction(ref, to, text, kind, ledger);
      if (posted) return posted;
    }
    return this.postToChannel(to, text, kind, ref, ledger);
  }

  classifyWriteError(err: unknown): WriteFailure {
    return discordWriteFailure(err);
  }

  /**
   * Discord has no "message is not modified" error: an edit with the same content succeeds (and
   * counts as an edit), so there is nothing to tolerate; the stream skips unchanged edits itself.
   */
  async edit(to: InboundMessage, messageId: string, text: string): Promise<void> {
    const content = fitStatus(text);
    if (isStreamedId(messageId)) return this.editStreamed(to, parseStreamed(messageId), content, false, 'status');
    if (messageId === ORIGINAL) {
      const ref = interactionOf(to);
      // A deferred response that shows a streamed answer keeps it: progress is not written over the model's words.
      if (ref && this.usable(ref) && !this.heldOriginal.has(ref.id)) await this.hook(ref, () => this.editOriginal(ref, content, 'status'));
      return;
    }
    await this.rest.request('PATCH', `/channels/${to.conversation}/messages/${messageId}`, { body: { content, allowed_mentions: NO_PINGS, ...this.edited('status') } });
  }

  /**
   * A status message that was the deferred response has become the answer (or was deleted with a
   * failure): nothing to remove. A streamed answer's message is deleted where it is.
   */
  async remove(to: InboundMessage, messageId: string): Promise<void> {
    if (messageId === ORIGINAL) return;
    if (isStreamedId(messageId)) return this.removeStreamed(to, parseStreamed(messageId));
    await this.deleteChannelMessage(to, messageId);
  }

  /** Streamed writes of one channel are STREAM_INTERVAL_MS apart, longer while a 429's retry-after holds it. */
  streamIntervalMs(to: InboundMessage): number {
    return Math.max(STREAM_INTERVAL_MS, this.pacing.waitMs(to.conversation, false));
  }

  /**
   * The answer so far, in the messages `post` would put the final answer in: a slash command's
   * deferred response and follow-ups while its token is valid, else channel messages (replying to
   * the user's message, or naming the command's user), split at 2,000 characters exactly as the
   * final answer is. Only messages whose text changes are edited; a text that shrank removes the
   * messages it no longer needs. Too soon after the last write, or while a 429 holds the channel,
   * nothing is written and `shown` comes back as it was.
   */
  async streamAnswer(to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
    const key = to.conversation;
    if (this.pacing.waitMs(key, shown.ids.length > 0) > 0) return shown;
    const streamed = shown.ids.map(parseStreamed);
    this.holdOriginal(to, streamed);
    const inChannel = this.streamsInChannel(to, streamed);
    const mention = inChannel ? this.mentionOf(to) : '';
    const want = streamLayout(text, mention);
    if (want.length === 0 || (want.length === shown.texts.length && want.every((t, i) => t === shown.texts[i]))) return shown;
    this.pacing.wrote(key);
    const next: StreamShown = { ids: [...shown.ids], texts: [...shown.texts] };
    try {
      await this.showStream(to, want, next, { inChannel, names: mention !== '' });
    } catch (err) {
      // The deferred response refused the first write: the whole stream goes to the channel, as `post` would.
      if (err instanceof InteractionGoneAt && shown.ids.length === 0) return this.streamAnswer(to, text, shown);
      if (err instanceof DiscordRateLimitError) {
        this.pacing.limited(key, err.retryAfterMs, err.global);
      } else {
        // A message posted or removed before the failure must not be forgotten: it is returned as shown.
        if (next.ids.length === shown.ids.length && next.ids.every((id, i) => id === shown.ids[i])) throw err;
        this.log.warn({ err: safeError(err) }, 'a streamed write failed after the stream changed messages');
      }
    }
    return next;
  }

  /**
   * The final answer in the streamed messages, formatted and split as `post` does: piece i
   * replaces streamed message i, pieces past them are posted (follow-ups, or channel messages
   * with their nonce), streamed messages the answer no longer needs are removed. Through the
   * ledger, so a resumed delivery repeats only edits (harmless) and posts nothing twice. A 429
   * the stream met still holds the channel: its retry-after is waited out first, not met again.
   */
  async finishStream(to: InboundMessage, shown: StreamShown, text: string, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    const held = this.pacing.waitMs(to.conversation, false);
    if (held > 0) await sleep(Math.min(held, MAX_FINISH_HOLD_MS));
    if (shown.ids.length === 0) return this.post(to, text, 'answer', ledger);
    const streamed = shown.ids.map(parseStreamed);
    this.holdOriginal(to, streamed);
    const inChannel = streamed[0]!.where === 'channel';
    const mention = inChannel ? this.mentionOf(to) : '';
    const pieces = finalLayout(text, mention);
    const ids = await sendPieces(pieces, ledger, {
      classify: discordWriteFailure,
      // An edit can be repeated, and so can a channel message with its nonce; a follow-up cannot.
      resendable: (i) => i < streamed.length || inChannel,
      send: async (content, i) => {
        const names = i === 0 && mention !== '';
        const m = streamed[i];
        if (m) {
          try {
            await this.editStreamed(to, m, content, names, 'answer');
            return postedId(m);
          } catch (err) {
            // Someone deleted the streamed message: the piece is posted anew.
            if (!(err instanceof FollowUpGone || unknownMessage(err))) throw err;
          }
        }
        return postedId(await this.postStreamed(to, content, { index: i, inChannel, first: shown.ids[0], original: false, names }));
      },
    });
    for (const extra of streamed.slice(pieces.length)) await this.removeStreamed(to, extra);
    return ids;
  }

  /** A slash command shows "is thinking…" on its deferred response; typing is for mentions and DMs. */
  async typing(to: InboundMessage): Promise<void> {
    if (interactionOf(to)) return;
    await this.rest.request('POST', `/channels/${to.conversation}/typing`, { idempotent: true });
  }

  /**
   * The approval card, with Approve / Deny buttons the gateway decides. Always a channel message
   * (it is edited when the run resumes, which may be past a slash command's 15-minute token): a
   * reply to the user's message for a mention or DM, a message in the command's channel for a
   * slash command. Its nonce comes from the approval id, so a resend returns the card already
   * posted. It pings no one.
   */
  async approvalCard(to: InboundMessage, card: ApprovalCard): Promise<string> {
    const body: Record<string, unknown> = { content: cardText(card), components: cardButtons(card.id), allowed_mentions: NO_PINGS, nonce: cardNonce(card.id), enforce_nonce: true, ...quietReply(to), ...this.created('card') };
    const posted = await this.rest.request<Posted>('POST', `/channels/${to.conversation}/messages`, { body, idempotent: true });
    return posted.id;
  }

  /**
   * The decided card: the same text plus the decision, without its buttons. The gateway's answer
   * to the click (UPDATE_MESSAGE) shows the same text already, so this edit is idempotent: it
   * settles the card whichever of the two lands first, and shows an expiry or a /stop. A card
   * someone deleted stays deleted.
   */
  async approvalDecided(to: InboundMessage, messageId: string, card: ApprovalCard, outcome: ApprovalOutcome): Promise<void> {
    try {
      await this.rest.request('PATCH', `/channels/${to.conversation}/messages/${messageId}`, { body: { content: decidedText(card, outcome), components: [], allowed_mentions: NO_PINGS, ...this.edited('card') } });
    } catch (err) {
      if (!(err instanceof DiscordApiError && err.status === 404)) throw err;
    }
  }

  readonly uploadMaxBytes = UPLOAD_MAX_BYTES;

  /**
   * A workspace file as a message of its own: the attachment, with the caption as its text,
   * pinging no one. A slash command gets it as a follow-up of its interaction while the token is
   * valid, else (like its answer) in the channel; a mention or DM as a reply to the user's message.
   */
  async upload(to: InboundMessage, file: OutgoingFile, signal: AbortSignal): Promise<string> {
    const part: UploadPart = { name: file.name, data: await file.read(), contentType: file.mime };
    const ref = interactionOf(to);
    if (ref && this.usable(ref)) {
      const posted = await this.uploadToInteraction(ref, file, part, signal);
      if (posted) return posted;
    }
    return this.uploadToChannel(to, file, part, signal);
  }

  download(attachment: Attachment, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
    return downloadAttachment(attachment, maxBytes, signal, this.hosts);
  }

  /**
   * Slash commands folded into this turn before its last message still show "is thinking…":
   * their deferred responses now point at the answer below (or say how the turn ended). Then the
   * turn's interactions are forgotten: the reply is final, and a token is not kept past its use
   * (a redelivered reply finds them gone and only skips these edits, which were made already).
   */
  async ended(to: InboundMessage, outcome: DeliveredOutcome): Promise<void> {
    this.gone.delete(to.eventId);
    this.heldOriginal.delete(to.eventId);
    if (!this.redis) return;
    for (const id of outcome.messageIds) {
      if (id === to.id) continue;
      const raw = await this.redis.get(interactionKey(this.prefix, id));
      if (!raw) continue;
      const ref = JSON.parse(raw) as InteractionRef;
      if (!this.usable(ref)) continue;
      await this.hook(ref, () => this.editOriginal(ref, foldedNote(outcome), 'answer')).catch((err: unknown) => this.log.warn({ err: safeError(err), eventId: ref.id }, 'could not point a folded slash command at its answer'));
    }
    if (outcome.messageIds.length > 0) await this.redis.del(...outcome.messageIds.map((id) => interactionKey(this.prefix, id)));
  }

  private usable(ref: InteractionRef): boolean {
    if (this.gone.size > 1_000) this.gone.clear();
    return !this.gone.has(ref.id) && tokenAlive(ref, this.now());
  }

  /** A webhook call; null when the interaction no longer takes messages (then it is not tried again). */
  private async hook<T>(ref: InteractionRef, call: () => Promise<T>): Promise<T | null> {
    try {
      return await call();
    } catch (err) {
      if (!interactionGone(err)) throw err;
      this.gone.add(ref.id);
      this.log.info({ eventId: ref.id, status: (err as DiscordApiError).status }, 'interaction token no longer valid; answering in the channel');
      return null;
    }
  }

  /**
   * The flags of a message made with content (see ../link-previews.ts): SUPPRESS_EMBEDS unless it
   * may embed, with the message's other flags (`others`, e.g. EPHEMERAL). Every message create
   * (channel messages, follow-ups, files) takes them from here.
   */
  private created(kind: PreviewKind, others = 0): { flags?: number } {
    const flags = others | this.embedFlag(kind);
    return flags ? { flags } : {};
  }

  /**
   * The flags of an edit with content: SUPPRESS_EMBEDS set, or unset where an answer may embed
   * (an answer written over a status line in the deferred response would keep its flag). Edits
   * can change only this flag, so no other is lost. Every edit with content takes it from here.
   */
  private edited(kind: PreviewKind): { flags: number } {
    return { flags: this.embedFlag(kind) };
  }

  private embedFlag(kind: PreviewKind): number {
    return previewsAllowed(this.linkPreviews, kind) ? 0 : SUPPRESS_EMBEDS;
  }

  private editOriginal(ref: InteractionRef, content: string, kind: PreviewKind, write: WriteOptions = {}): Promise<Posted> {
    return this.rest.request<Posted>('PATCH', `/webhooks/${ref.applicationId}/${ref.token}/messages/@original`, { auth: false, body: { content, allowed_mentions: NO_PINGS, ...this.edited(kind) }, ...write });
  }

  private followUp(ref: InteractionRef, content: string, kind: PreviewKind, flags = 0, write: WriteOptions = {}): Promise<Posted> {
    // Not idempotent: a follow-up whose response was lost is not sent again (only a 429 is retried).
    return this.rest.request<Posted>('POST', `/webhooks/${ref.applicationId}/${ref.token}`, { auth: false, body: { content, allowed_mentions: NO_PINGS, ...this.created(kind, flags) }, ...write });
  }

  /** An edit or deletion of one of the interaction's follow-ups; a deleted follow-up is FollowUpGone, not the interaction gone. */
  private async followUpCall(ref: InteractionRef, method: 'PATCH' | 'DELETE', id: string, options: RequestOptions): Promise<true> {
    try {
      await this.rest.request(method, `/webhooks/${ref.applicationId}/${ref.token}/messages/${id}`, { auth: false, ...options });
      return true;
    } catch (err) {
      throw unknownMessage(err) ? new FollowUpGone(err) : err;
    }
  }

  /** A stream that has messages stays where its first one is; a new one goes where `post` would put the answer. */
  private streamsInChannel(to: InboundMessage, streamed: StreamedMessage[]): boolean {
    if (streamed[0]) return streamed[0].where === 'channel';
    const ref = interactionOf(to);
    return !(ref && this.usable(ref));
  }

  /** An expired slash command's answer is a plain channel message: it names the user who asked. */
  private mentionOf(to: InboundMessage): string {
    const ref = interactionOf(to);
    return ref ? `<@${ref.userId}>\n` : '';
  }

  private holdOriginal(to: InboundMessage, streamed: StreamedMessage[]): void {
    const ref = interactionOf(to);
    if (!ref || streamed[0]?.where !== 'original') return;
    if (this.heldOriginal.size > 1_000) this.heldOriginal.clear();
    this.heldOriginal.add(ref.id);
  }

  /** Makes the messages show `want` (edits, then posts, then removals, in order), updating `shown` as each write lands. */
  private async showStream(to: InboundMessage, want: string[], shown: StreamShown, where: { inChannel: boolean; names: boolean }): Promise<void> {
    const ref = interactionOf(to);
    for (const [i, content] of want.entries()) {
      const id = shown.ids[i];
      if (id !== undefined) {
        if (shown.texts[i] !== content) await this.editStreamed(to, parseStreamed(id), content, i === 0 && where.names, 'answer', STREAM_WRITE);
        shown.texts[i] = content;
        continue;
      }
      // The first message replaces the deferred response, unless an earlier step's text is kept there.
      const original = i === 0 && !where.inChannel && !(ref && this.heldOriginal.has(ref.id));
      const made = await this.postStreamed(to, content, { index: i, inChannel: where.inChannel, first: shown.ids[0], original, names: i === 0 && where.names, write: STREAM_WRITE });
      shown.ids.push(streamedId(made));
      shown.texts.push(content);
    }
    while (shown.ids.length > want.length) {
      await this.removeStreamed(to, parseStreamed(shown.ids.at(-1)!), STREAM_WRITE);
      shown.ids.pop();
      shown.texts.pop();
    }
  }

  /**
   * Posts a streamed answer's message: through the interaction while it takes messages (the
   * deferred response, or a follow-up: made only once the deferred response shows text, since a
   * follow-up to a still-thinking response would become that response), else in the channel with
   * a nonce. Throws InteractionGoneAt when the deferred response itself is refused.
   */
  private async postStreamed(to: InboundMessage, content: string, p: StreamPost): Promise<StreamedMessage> {
    const ref = interactionOf(to);
    if (!p.inChannel && ref && this.usable(ref)) {
      const made = await this.hook(ref, () => (p.original ? this.editOriginal(ref, content, 'answer', p.write) : this.followUp(ref, content, 'answer', 0, p.write)));
      if (made && p.original) this.heldOriginal.add(ref.id);
      if (made) return { where: p.original ? 'original' : 'followup', id: made.id };
      if (p.original) throw new InteractionGoneAt(p.index);
    }
    const body: Record<string, unknown> = { content, allowed_mentions: NO_PINGS, nonce: streamNonce(to, p.first, p.index), enforce_nonce: true, ...(p.index === 0 && p.inChannel && firstPlacement(to, 'answer', p.names)), ...this.created('answer') };
    const posted = await this.rest.request<Posted>('POST', `/channels/${to.conversation}/messages`, { body, idempotent: true, ...p.write });
    return { where: 'channel', id: posted.id };
  }

  /**
   * Edits a streamed message: through the interaction's webhook while its token is valid; after
   * that its (non-ephemeral) messages are still the bot's own in the channel, edited by their id.
   * A deferred response whose id was never learnt cannot be reached then, and is skipped as `edit` skips it.
   */
  private async editStreamed(to: InboundMessage, m: StreamedMessage, content: string, names: boolean, kind: PreviewKind, write: WriteOptions = {}): Promise<void> {
    const ref = interactionOf(to);
    if (m.where !== 'channel' && ref && this.usable(ref)) {
      const body = { content, allowed_mentions: NO_PINGS, ...this.edited(kind) };
      const done = await this.hook<unknown>(ref, () => (m.where === 'original' ? this.editOriginal(ref, content, kind, write) : this.followUpCall(ref, 'PATCH', m.id!, { body, ...write })));
      if (done) return;
    }
    if (!m.id) return;
    const allowed = names && ref ? { parse: [], users: [ref.userId] } : NO_PINGS;
    await this.rest.request('PATCH', `/channels/${to.conversation}/messages/${m.id}`, { body: { content, allowed_mentions: allowed, ...this.edited(kind) }, ...write });
  }

  /** Deletes a streamed message where it is; one already gone is fine. */
  private async removeStreamed(to: InboundMessage, m: StreamedMessage, write: WriteOptions = {}): Promise<void> {
    const ref = interactionOf(to);
    if (m.where !== 'channel' && ref && this.usable(ref)) {
      const path = `/webhooks/${ref.applicationId}/${ref.token}/messages/${m.where === 'original' ? '@original' : m.id}`;
      const done = await this.hook(ref, async () => {
        if (m.where === 'original') return this.rest.request('DELETE', path, { auth: false, ...write }).then(() => true, (err: unknown) => {
          // Already deleted (a resumed delivery): done, and not a sign that the interaction is gone.
          if (unknownMessage(err)) return true;
          throw err;
        });
        return this.followUpCall(ref, 'DELETE', m.id!, write).catch((err: unknown) => {
          if (err instanceof FollowUpGone) return true;
          throw err;
        });
      });
      if (done) return;
    }
    if (m.id) await this.deleteChannelMessage(to, m.id, write);
  }

  private async deleteChannelMessage(to: InboundMessage, id: string, write: WriteOptions = {}): Promise<void> {
    try {
      await this.rest.request('DELETE', `/channels/${to.conversation}/messages/${id}`, write);
    } catch (err) {
      if (!(err instanceof DiscordApiError && err.status === 404)) throw err;
    }
  }

  /** Null when the interaction refused the first write: the caller posts everything in the channel. */
  private async postToInteraction(ref: InteractionRef, to: InboundMessage, text: string, kind: PostKind, ledger: PieceLedger): Promise<string[] | null> {
    // The deferred response shows a streamed step's text: it stays, and what comes now follows it.
    const held = this.heldOriginal.has(ref.id);
    if (kind === 'status') return held || (await this.hook(ref, () => this.editOriginal(ref, fitStatus(text), 'status'))) ? [ORIGINAL] : null;
    if (kind === 'notice') {
      // Only the user who ran the command sees a failure line; the deferred response goes away.
      const pieces = splitMessage(text, MESSAGE_LIMIT);
      const ids = await this.interactionPieces(ref, pieces, ledger, false, (piece) => this.followUp(ref, piece, 'answer', EPHEMERAL));
      if (ids.gone === 0) return null;
      if (held) return ids.posted;
      await this.hook(ref, () => this.rest.request('DELETE', `/webhooks/${ref.applicationId}/${ref.token}/messages/@original`, { auth: false })).catch((err: unknown) =>
        this.log.warn({ err: safeError(err), eventId: ref.id }, 'could not delete the deferred response'),
      );
      return ids.posted;
    }
    const pieces = splitMessage(toDiscordMarkdown(text), MESSAGE_LIMIT);
    const sent = await this.interactionPieces(ref, pieces, ledger, !held, (piece, i) => (i === 0 && !held ? this.editOriginal(ref, piece, 'answer') : this.followUp(ref, piece, 'answer')));
    if (sent.gone === 0) return null;
    if (sent.gone === undefined) return sent.posted;
    return [...sent.posted, ...(await this.channelPieces(to, pieces.slice(sent.gone), kind, ledger, sent.gone))];
  }

  /**
   * Pieces through the interaction's webhook. `editsFirst`: piece 0 replaces the deferred
   * response, which is idempotent; a follow-up is not, so one whose outcome is unknown is not sent again.
   * `gone`: the index at which the webhook stopped taking messages (the rest goes to the channel).
   */
  private async interactionPieces(
    ref: InteractionRef,
    pieces: string[],
    ledger: PieceLedger,
    editsFirst: boolean,
    write: (piece: string, i: number) => Promise<Posted>,
  ): Promise<{ posted: string[]; gone?: number }> {
    try {
      const posted = await sendPieces(pieces, ledger, {
        classify: (err) => (err instanceof InteractionGoneAt ? 'retry' : discordWriteFailure(err)),
        resendable: (i) => editsFirst && i === 0,
        send: async (piece, i) => {
          const done = await this.hook(ref, () => write(piece, i));
          if (!done) throw new InteractionGoneAt(i);
          return editsFirst && i === 0 ? ORIGINAL : done.id;
        },
      });
      return { posted };
    } catch (err) {
      if (!(err instanceof InteractionGoneAt)) throw err;
      const posted = pieces.slice(0, err.index).flatMap((_, k) => {
        const state = ledger.state(k);
        return typeof state === 'object' ? [state.posted] : [];
      });
      return { posted, gone: err.index };
    }
  }

  /** Null when the interaction no longer takes messages: the caller uploads to the channel. */
  private async uploadToInteraction(ref: InteractionRef, file: OutgoingFile, part: UploadPart, signal: AbortSignal): Promise<string | null> {
    if (!(await this.hook(ref, () => this.settleDeferred(ref, file, signal)))) return null;
    // Not idempotent, like any follow-up: one whose response was lost is not sent again (only a 429 is retried).
    const posted = await this.hook(ref, () =>
      this.rest.request<Posted>('POST', `/webhooks/${ref.applicationId}/${ref.token}`, { auth: false, body: { ...fileMessage(file), ...this.created('answer') }, files: [part], timeoutMs: UPLOAD_TIMEOUT_MS, signal }),
    );
    return posted?.id ?? null;
  }

  /**
   * While the deferred response still shows "is thinking…", Discord makes a follow-up that very
   * response instead of a new message (documented, deprecated): the file would then sit under the
   * progress lines and the answer that overwrite its caption. A progress line settles it first.
   */
  private async settleDeferred(ref: InteractionRef, file: OutgoingFile, signal: AbortSignal): Promise<true> {
    const original = await this.rest.request<{ flags?: number }>('GET', `/webhooks/${ref.applicationId}/${ref.token}/messages/@original`, { auth: false, signal });
    if ((original.flags ?? 0) & LOADING) await this.editOriginal(ref, fitStatus(`• sending ${file.name}`), 'status');
    return true;
  }

  /** With enforce_nonce a resent upload (a lost response, a 5xx) returns the message already made. */
  private async uploadToChannel(to: InboundMessage, file: OutgoingFile, part: UploadPart, signal: AbortSignal): Promise<string> {
    const body = { ...fileMessage(file), nonce: uploadNonce(), enforce_nonce: true, ...quietReply(to), ...this.created('answer') };
    const posted = await this.rest.request<Posted>('POST', `/channels/${to.conversation}/messages`, { body, files: [part], idempotent: true, timeoutMs: UPLOAD_TIMEOUT_MS, signal });
    return posted.id;
  }

  private async postToChannel(to: InboundMessage, text: string, kind: PostKind, ref: InteractionRef | undefined, ledger: PieceLedger): Promise<string[]> {
    if (kind === 'status') return this.channelPieces(to, [fitStatus(text)], kind, ledger, 0);
    // An expired slash command's answer is a plain channel message: it names the user who asked.
    const mention = ref ? `<@${ref.userId}>\n` : '';
    return this.channelPieces(to, splitMessage(toDiscordMarkdown(text), MESSAGE_LIMIT - mention.length), kind, ledger, 0, ref && mention);
  }

  /**
   * Posts pieces in order; the first replies to the user's message (or names the slash command's
   * user). With enforce_nonce a resent POST returns the message already made, so a piece whose
   * outcome is unknown is sent again with its nonce.
   */
  private async channelPieces(to: InboundMessage, pieces: string[], kind: PostKind, ledger: PieceLedger, offset: number, mention = ''): Promise<string[]> {
    return sendPieces(pieces, ledger, {
      offset,
      classify: discordWriteFailure,
      resendable: () => true,
      send: async (piece, i) => {
        const first = i === 0;
        const body: Record<string, unknown> = { content: first ? `${mention}${piece}` : piece, allowed_mentions: NO_PINGS, nonce: pieceNonce(to, kind, i), enforce_nonce: true, ...(first && firstPlacement(to, kind, mention !== '')), ...this.created(kind === 'status' ? 'status' : 'answer') };
        const posted = await this.rest.request<Posted>('POST', `/channels/${to.conversation}/messages`, { body, idempotent: true });
        return posted.id;
      },
    });
  }
}

/**
 * Where a reply's first channel message goes and whom it notifies: it names the slash command's
 * user (`names`: the command's interaction is gone), or replies to the user's message (a status
 * message notifies no one).
 */
function firstPlacement(to: InboundMessage, kind: PostKind, names: boolean): Record<string, unknown> {
  if (names) return { allowed_mentions: { parse: [], users: [interactionOf(to)!.userId] } };
  if (!to.replyTo) return {};
  return { message_reference: { message_id: to.replyTo, channel_id: to.conversation, fail_if_not_exists: false }, allowed_mentions: { parse: [], replied_user: kind !== 'status' } };
}

/** The payload_json of a message carrying one file (`files[0]`) and its caption. */
function fileMessage(file: OutgoingFile): Record<string, unknown> {
  return { ...(file.caption !== undefined && { content: file.caption }), attachments: [{ id: 0, filename: file.name }], allowed_mentions: NO_PINGS };
}

/**
 * A reply to the user's message that notifies no one (a card, a file: the answer is what
 * notifies), for a mention or DM; a slash command has no message to reply to.
 */
function quietReply(to: InboundMessage): Record<string, unknown> {
  if (!to.replyTo || interactionOf(to)) return {};
  return { message_reference: { message_id: to.replyTo, channel_id: to.conversation, fail_if_not_exists: false }, allowed_mentions: { parse: [], replied_user: false } };
}
