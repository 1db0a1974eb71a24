import { splitMessage } from '../kit/chunk.js';
import { PLACEHOLDER, postedId, sendPieces, type PieceLedger } from '../kit/pieces.js';
import type { InboundMessage, PostKind } from '../types.js';
import { discordWriteFailure, InteractionGoneAt, safeError } from './errors.js';
import { fitStatus, toDiscordMarkdown } from './format.js';
import { interactionOf, MESSAGE_LIMIT, ORIGINAL, pieceNonce, type InteractionRef } from './ids.js';
import { firstPlacement, NO_PINGS, type DiscordWriter, type Posted } from './writer.js';

const EPHEMERAL = 1 << 6;

/**
 * A reply (status, answer or notice) in pieces: a slash command's through its interaction
 * webhook while its token is valid (the status edits the deferred response, the answer replaces
 * it with the rest as follow-ups, a notice is an ephemeral line), else the same text as channel
 * messages; a mention's or DM's as replies to the user's message.
 */
export async function postReply(w: DiscordWriter, to: InboundMessage, text: string, kind: PostKind, ledger: PieceLedger): Promise<string[]> {
  const ref = interactionOf(to);
  if (ref && w.usable(ref)) {
    const posted = await postToInteraction(w, ref, to, text, kind, ledger);
    if (posted) return posted;
  }
  if (kind === 'status') return channelPieces(w, to, [fitStatus(text)], kind, ledger, 0);
  // An expired slash command's answer is a plain channel message: it names the user who asked.
  const mention = ref ? `<@${ref.userId}>\n` : '';
  return channelPieces(w, to, splitMessage(toDiscordMarkdown(text), MESSAGE_LIMIT - mention.length), kind, ledger, 0, ref && mention);
}

/** Null when the interaction refused the first write: the caller posts everything in the channel. */
async function postToInteraction(
  w: DiscordWriter,
  ref: InteractionRef,
  to: InboundMessage,
  text: string,
  kind: PostKind,
  ledger: PieceLedger,
): Promise<string[] | null> {
  const key = to.conversation;
  // The deferred response shows a streamed step's text: it stays, and what comes now follows it.
  const held = w.heldOriginal.has(ref.id);
  if (kind === 'status') return held || (await w.hook(ref, () => w.editOriginal(key, ref, fitStatus(text), 'status'))) ? [ORIGINAL] : null;
  if (kind === 'notice') {
    // Only the user who ran the command sees a failure line; the deferred response goes away.
    const pieces = splitMessage(text, MESSAGE_LIMIT);
    const ids = await interactionPieces(w, ref, key, pieces, ledger, false, EPHEMERAL, (piece) => w.followUp(key, ref, piece, 'answer', EPHEMERAL));
    if (ids.gone === 0) return null;
    if (held) return ids.posted;
    await w
      .hook(ref, () => w.write(key, 'DELETE', `/webhooks/${ref.applicationId}/${ref.token}/messages/@original`, { auth: false }))
      .catch((err: unknown) => w.log.warn({ err: safeError(err), eventId: ref.id }, 'could not delete the deferred response'));
    return ids.posted;
  }
  const pieces = splitMessage(toDiscordMarkdown(text), MESSAGE_LIMIT);
  const sent = await interactionPieces(w, ref, key, pieces, ledger, !held, 0, (piece, i) =>
    i === 0 && !held ? w.editOriginal(key, ref, piece, 'answer') : w.followUp(key, ref, piece, 'answer'),
  );
  if (sent.gone === 0) return null;
  if (sent.gone === undefined) return sent.posted;
  return [...sent.posted, ...(await channelPieces(w, to, pieces.slice(sent.gone), kind, ledger, sent.gone))];
}

/**
 * Pieces through the interaction's webhook. `editsFirst`: piece 0 replaces the deferred
 * response, which is idempotent. A follow-up takes no nonce, so with a journal it is posted as a
 * placeholder (`flags`: its flags, e.g. ephemeral) whose id is journaled and then edited into the
 * piece (see ../kit/pieces.ts): a worker that dies in between leaves an orphan "…" at worst.
 * `key`: the channel, whose pacer turn each write waits for. `gone`: the index at which the webhook stopped taking messages (the rest goes to the channel).
 */
async function interactionPieces(
  w: DiscordWriter,
  ref: InteractionRef,
  key: string,
  pieces: string[],
  ledger: PieceLedger,
  editsFirst: boolean,
  flags: number,
  write: (piece: string, i: number) => Promise<Posted>,
): Promise<{ posted: string[]; gone?: number }> {
  const onHook = async <T>(i: number, call: () => Promise<T>): Promise<T> => {
    const done = await w.hook(ref, call);
    if (done === null) throw new InteractionGoneAt(i);
    return done;
  };
  try {
    const posted = await sendPieces(pieces, ledger, {
      classify: (err) => (err instanceof InteractionGoneAt ? 'retry' : discordWriteFailure(err)),
      limit: MESSAGE_LIMIT,
      resendable: (i) => editsFirst && i === 0,
      send: async (piece, i) => {
        const done = await onHook(i, () => write(piece, i));
        return editsFirst && i === 0 ? ORIGINAL : done.id;
      },
      placeholder: {
        place: async (i) => (await onHook(i, () => w.followUp(key, ref, PLACEHOLDER, 'answer', flags))).id,
        fill: async (id, piece, i) => {
          await onHook(i, () => w.followUpCall(key, ref, 'PATCH', id, { body: { content: piece, allowed_mentions: NO_PINGS, ...w.edited('answer') } }));
        },
      },
    });
    return { posted };
  } catch (err) {
    if (!(err instanceof InteractionGoneAt)) throw err;
    const posted = pieces.slice(0, err.index).flatMap((_, k) => postedId(ledger.state(k)) ?? []);
    return { posted, gone: err.index };
  }
}

/**
 * Posts pieces in order; the first replies to the user's message (or names the slash command's
 * user). With enforce_nonce a resent POST returns the message already made, so a piece whose
 * outcome is unknown is sent again with its nonce.
 */
function channelPieces(
  w: DiscordWriter,
  to: InboundMessage,
  pieces: string[],
  kind: PostKind,
  ledger: PieceLedger,
  offset: number,
  mention = '',
): Promise<string[]> {
  const key = to.conversation;
  return sendPieces(pieces, ledger, {
    offset,
    classify: discordWriteFailure,
    limit: MESSAGE_LIMIT,
    resendable: () => true,
    send: async (piece, i) => {
      const first = i === 0;
      const body: Record<string, unknown> = {
        content: first ? `${mention}${piece}` : piece,
        allowed_mentions: NO_PINGS,
        nonce: pieceNonce(to, kind, i),
        enforce_nonce: true,
        ...(first && firstPlacement(to, kind, mention !== '')),
        ...w.created(kind === 'status' ? 'status' : 'answer'),
      };
      const posted = await w.write<Posted>(key, 'POST', `/channels/${key}/messages`, { body, idempotent: true });
      return posted.id;
    },
  });
}
