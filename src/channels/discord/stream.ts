import { memoryLedger, sendPieces, type PieceLedger } from '../kit/pieces.js';
import type { PreviewKind } from '../kit/link-previews.js';
import type { InboundMessage, StreamShown } from '../types.js';
import { DiscordRateLimitError, discordWriteFailure, FollowUpGone, InteractionGoneAt, safeError, unknownMessage } from './errors.js';
import { interactionOf, MESSAGE_LIMIT } from './ids.js';
import { STREAM_INTERVAL_MS } from './pacing.js';
import { finalLayout, parseStreamed, postedId, streamedId, streamLayout, streamNonce, type StreamedMessage } from './stream-layout.js';
import { firstPlacement, mentionOf, NO_PINGS, type DiscordWriter, type Posted, type WriteOptions } from './writer.js';

/**
 * A streamed write does not wait: a 429 is not waited out (the next write brings newer text, and
 * the final delivery waits as long as Discord asks), a 5xx is tried once more, a hung request
 * gives up sooner than the client's default.
 */
const STREAM_WRITE: WriteOptions = { retry: { maxWaitMs: 0, attempts: 2 }, timeoutMs: 5_000 };

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

/**
 * A streamed answer on Discord, in the messages `post` would put the final answer in: a slash
 * command's deferred response and follow-ups while its token is valid, else channel messages
 * (replying to the user's message, or naming the command's user), split at 2,000 characters
 * exactly as the final answer is (stream-layout.ts). Every write waits for the channel's turn.
 */
export class DiscordStream {
  constructor(private readonly w: DiscordWriter) {}

  /** Streamed writes of one channel are STREAM_INTERVAL_MS apart, longer while a 429's retry-after holds it. */
  intervalMs(to: InboundMessage): number {
    return Math.max(STREAM_INTERVAL_MS, this.w.pacing.waitMs(to.conversation));
  }

  /**
   * Only messages whose text changes are edited; a text that shrank removes the messages it no
   * longer needs. While the channel's pacer has no turn free, or a 429 holds the channel,
   * nothing is written and `shown` comes back as it was.
   */
  async show(to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
    if (this.w.pacing.waitMs(to.conversation) > 0) return shown;
    return this.showNow(to, text, shown);
  }

  private async showNow(to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
    const key = to.conversation;
    const streamed = shown.ids.map(parseStreamed);
    this.holdOriginal(to, streamed);
    const inChannel = this.inChannel(to, streamed);
    const mention = inChannel ? mentionOf(to) : '';
    const want = streamLayout(text, mention);
    if (want.length === 0 || (want.length === shown.texts.length && want.every((t, i) => t === shown.texts[i]))) return shown;
    const next: StreamShown = { ids: [...shown.ids], texts: [...shown.texts] };
    try {
      await this.write(to, want, next, { inChannel, names: mention !== '' });
    } catch (err) {
      // The deferred response refused the first write: the whole stream goes to the channel, as `post` would (on the next turn).
      if (err instanceof InteractionGoneAt && shown.ids.length === 0) return this.showNow(to, text, shown);
      if (err instanceof DiscordRateLimitError) {
        this.w.pacing.limited(key, err.retryAfterMs, err.global);
      } else {
        // A message posted or removed before the failure must not be forgotten: it is returned as shown.
        if (next.ids.length === shown.ids.length && next.ids.every((id, i) => id === shown.ids[i])) throw err;
        this.w.log.warn({ err: safeError(err) }, 'a streamed write failed after the stream changed messages');
      }
    }
    return next;
  }

  /**
   * The final answer in the streamed messages (`shown` has at least one), formatted and split as
   * `post` does: piece i replaces streamed message i, pieces past them are posted (follow-ups, or
   * channel messages with their nonce), streamed messages the answer no longer needs are removed.
   * Through the ledger, so a resumed delivery repeats only edits (harmless) and posts nothing
   * twice. Each write waits for its turn, a 429's hold included, so the final text is delayed, never dropped.
   */
  async finish(to: InboundMessage, shown: StreamShown, text: string, ledger: PieceLedger = memoryLedger()): Promise<string[]> {
    const streamed = shown.ids.map(parseStreamed);
    this.holdOriginal(to, streamed);
    const inChannel = streamed[0]!.where === 'channel';
    const mention = inChannel ? mentionOf(to) : '';
    const pieces = finalLayout(text, mention);
    const ids = await sendPieces(pieces, ledger, {
      classify: discordWriteFailure,
      limit: MESSAGE_LIMIT,
      // An edit can be repeated, and so can a channel message with its nonce; a follow-up cannot.
      resendable: (i) => i < streamed.length || inChannel,
      send: async (content, i) => {
        const names = i === 0 && mention !== '';
        const m = streamed[i];
        if (m) {
          try {
            await this.edit(to, m, content, names, 'answer');
            return postedId(m);
          } catch (err) {
            // Someone deleted the streamed message: the piece is posted anew.
            if (!(err instanceof FollowUpGone || unknownMessage(err))) throw err;
          }
        }
        return postedId(await this.post(to, content, { index: i, inChannel, first: shown.ids[0], original: false, names }));
      },
    });
    for (const extra of streamed.slice(pieces.length)) await this.remove(to, extra);
    return ids;
  }

  /**
   * Edits a streamed message: through the interaction's webhook while its token is valid; after
   * that its (non-ephemeral) messages are still the bot's own in the channel, edited by their id.
   * A deferred response whose id was never learnt cannot be reached then, and is skipped as `edit` skips it.
   */
  async edit(to: InboundMessage, m: StreamedMessage, content: string, names: boolean, kind: PreviewKind, write: WriteOptions = {}): Promise<void> {
    const ref = interactionOf(to);
    const key = to.conversation;
    if (m.where !== 'channel' && ref && this.w.usable(ref)) {
      const body = { content, allowed_mentions: NO_PINGS, ...this.w.edited(kind) };
      const done = await this.w.hook<unknown>(ref, () =>
        m.where === 'original' ? this.w.editOriginal(key, ref, content, kind, write) : this.w.followUpCall(key, ref, 'PATCH', m.id!, { body, ...write }),
      );
      if (done) return;
    }
    if (!m.id) return;
    const allowed = names && ref ? { parse: [], users: [ref.userId] } : NO_PINGS;
    await this.w.write(key, 'PATCH', `/channels/${key}/messages/${m.id}`, { body: { content, allowed_mentions: allowed, ...this.w.edited(kind) }, ...write });
  }

  /** Deletes a streamed message where it is; one already gone is fine. */
  async remove(to: InboundMessage, m: StreamedMessage, write: WriteOptions = {}): Promise<void> {
    const ref = interactionOf(to);
    const key = to.conversation;
    if (m.where !== 'channel' && ref && this.w.usable(ref)) {
      const path = `/webhooks/${ref.applicationId}/${ref.token}/messages/${m.where === 'original' ? '@original' : m.id}`;
      const done = await this.w.hook(ref, async () => {
        if (m.where === 'original') {
          return this.w.write(key, 'DELETE', path, { auth: false, ...write }).then(
            () => true,
            (err: unknown) => {
              // Already deleted (a resumed delivery): done, and not a sign that the interaction is gone.
              if (unknownMessage(err)) return true;
              throw err;
            },
          );
        }
        return this.w.followUpCall(key, ref, 'DELETE', m.id!, write).catch((err: unknown) => {
          if (err instanceof FollowUpGone) return true;
          throw err;
        });
      });
      if (done) return;
    }
    if (m.id) await this.w.deleteChannelMessage(to, m.id, write);
  }

  /** A stream that has messages stays where its first one is; a new one goes where `post` would put the answer. */
  private inChannel(to: InboundMessage, streamed: StreamedMessage[]): boolean {
    if (streamed[0]) return streamed[0].where === 'channel';
    const ref = interactionOf(to);
    return !(ref && this.w.usable(ref));
  }

  private holdOriginal(to: InboundMessage, streamed: StreamedMessage[]): void {
    const ref = interactionOf(to);
    if (!ref || streamed[0]?.where !== 'original') return;
    if (this.w.heldOriginal.size > 1_000) this.w.heldOriginal.clear();
    this.w.heldOriginal.add(ref.id);
  }

  /** Makes the messages show `want` (edits, then posts, then removals, in order), updating `shown` as each write lands. */
  private async write(to: InboundMessage, want: string[], shown: StreamShown, where: { inChannel: boolean; names: boolean }): Promise<void> {
    const ref = interactionOf(to);
    for (const [i, content] of want.entries()) {
      const id = shown.ids[i];
      if (id !== undefined) {
        if (shown.texts[i] !== content) await this.edit(to, parseStreamed(id), content, i === 0 && where.names, 'answer', STREAM_WRITE);
        shown.texts[i] = content;
        continue;
      }
      // The first message replaces the deferred response, unless an earlier step's text is kept there.
      const original = i === 0 && !where.inChannel && !(ref && this.w.heldOriginal.has(ref.id));
      const made = await this.post(to, content, {
        index: i,
        inChannel: where.inChannel,
        first: shown.ids[0],
        original,
        names: i === 0 && where.names,
        write: STREAM_WRITE,
      });
      shown.ids.push(streamedId(made));
      shown.texts.push(content);
    }
    while (shown.ids.length > want.length) {
      await this.remove(to, parseStreamed(shown.ids.at(-1)!), STREAM_WRITE);
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
  private async post(to: InboundMessage, content: string, p: StreamPost): Promise<StreamedMessage> {
    const ref = interactionOf(to);
    const key = to.conversation;
    if (!p.inChannel && ref && this.w.usable(ref)) {
      const made = await this.w.hook(ref, () =>
        p.original ? this.w.editOriginal(key, ref, content, 'answer', p.write) : this.w.followUp(key, ref, content, 'answer', 0, p.write),
      );
      if (made && p.original) this.w.heldOriginal.add(ref.id);
      if (made) return { where: p.original ? 'original' : 'followup', id: made.id };
      if (p.original) throw new InteractionGoneAt(p.index);
    }
    const body: Record<string, unknown> = {
      content,
      allowed_mentions: NO_PINGS,
      nonce: streamNonce(to, p.first, p.index),
      enforce_nonce: true,
      ...(p.index === 0 && p.inChannel && firstPlacement(to, 'answer', p.names)),
      ...this.w.created('answer'),
    };
    const posted = await this.w.write<Posted>(key, 'POST', `/channels/${key}/messages`, { body, idempotent: true, ...p.write });
    return { where: 'channel', id: posted.id };
  }
}
