import { createHash } from 'node:crypto';
import { WebAPIPlatformError, type WebClient } from '@slack/web-api';
import type { Logger } from '../../log.js';
import type { InboundMessage } from '../types.js';
import { slackCall } from './api.js';
import { SlackRefused } from './errors.js';
import { parseMessageKey } from './ids.js';
import type { SlackMetadata } from './writer.js';

/**
 * Whether a reply's piece whose outcome nobody learnt landed in Slack (sendPieces' `find`, see
 * ../kit/pieces.ts). chat.postMessage has no idempotency key, so a worker that died between
 * sending a piece and hearing Slack's answer leaves a piece that may or may not be in the
 * conversation; without a way to ask, it is posted again with the may-repeat note, a visible
 * duplicate when it had landed. So each posted piece names itself in Slack message metadata (the
 * message it answers, its ledger index, a digest of its text), and the resuming run lists the
 * thread (conversations.replies) or the conversation (conversations.history) from the answered
 * message on and looks for it. Reading needs the history scopes (channels:, groups:, im:,
 * mpim:history); without them, or on any failure, Slack "cannot tell" and the note stays the
 * fallback.
 *
 * The reads do not take the conversation's pacer turn: the pacer spaces message writes (Slack's
 * per-channel posting limit), reads have their own per-method limits, and a read's 429 must not
 * hold the conversation's writes. They are idempotent, so slackCall repeats them after a
 * transient failure.
 */

export const PIECE_EVENT = 'switchboard_piece';
/** Messages asked for per page (Slack may answer fewer: non-Marketplace apps get at most 15). */
const PAGE_LIMIT = 200;
/** Pages read before giving up ("cannot tell"): a reply's pieces follow the message they answer closely. */
const MAX_PAGES = 5;
/** Where a message id holds no Slack ts (/ask, a schedule firing), the lookup starts this long before it arrived: clocks differ. */
const CLOCK_MARGIN_MS = 5 * 60_000;

/**
 * What names piece `index` of the reply to `to`: the answered message's id (unique per reply, the
 * same in every worker), the ledger index, and a digest of the piece (so another post answering the
 * same message, a notice after an answer, is never taken for it).
 */
export function pieceMetadata(to: InboundMessage, index: number, piece: string): SlackMetadata {
  return { event_type: PIECE_EVENT, event_payload: { answers: to.id, piece: index, digest: digest(piece) } };
}

interface Listed {
  ts?: string;
  bot_id?: string;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
}

interface Listing {
  messages?: Listed[];
  has_more?: boolean;
  response_metadata?: { next_cursor?: string };
}

/** The ts of piece `index` when Slack shows it, null when the whole listing shows it is not there, undefined when Slack cannot tell. */
export async function findPiece(client: WebClient, log: Logger, to: InboundMessage, piece: string, index: number): Promise<string | null | undefined> {
  const want = pieceMetadata(to, index, piece);
  const thread = to.thread;
  const method = thread !== undefined ? 'conversations.replies' : 'conversations.history';
  const oldest = lookupStart(to);
  let needed: string | undefined;
  let cursor: string | undefined;
  try {
    for (let page = 0; page < MAX_PAGES; page++) {
      const args = {
        channel: to.conversation,
        include_all_metadata: true,
        limit: PAGE_LIMIT,
        ...(oldest !== undefined && { oldest, inclusive: true }),
        ...(cursor !== undefined && { cursor }),
      };
      const call = (): Promise<Listing> =>
        (thread !== undefined ? client.conversations.replies({ ...args, ts: thread }) : client.conversations.history(args)).catch((err: unknown) => {
          const scope = err instanceof WebAPIPlatformError ? (err.data as { needed?: unknown }).needed : undefined;
          if (typeof scope === 'string') needed = scope;
          throw err;
        }) as Promise<Listing>;
      const listing = await slackCall(method, call, { idempotent: true });
      const hit = listing.messages?.find((m) => m.bot_id !== undefined && names(m.metadata, want));
      if (hit?.ts) {
        log.info({ channel: to.conversation, thread, piece: index, ts: hit.ts }, 'a reply piece whose send was cut off had landed: not posted again');
        return hit.ts;
      }
      cursor = listing.response_metadata?.next_cursor || undefined;
      if (cursor === undefined) return listing.has_more ? undefined : null;
    }
    log.warn(
      { channel: to.conversation, thread, piece: index },
      `${method}: too many messages to look through for a reply piece; it is sent again with a note`,
    );
  } catch (err) {
    if (err instanceof SlackRefused && err.code === 'missing_scope') {
      const scope = needed ?? historyScope(to.conversation);
      log.warn(
        { channel: to.conversation, scope },
        `${method} needs the ${scope} scope to look up a reply piece whose send was cut off; it is sent again with a note`,
      );
    } else {
      log.warn(
        { err, channel: to.conversation, thread, piece: index },
        `${method}: could not look up a reply piece whose send was cut off; it is sent again with a note`,
      );
    }
  }
  return undefined;
}

function names(metadata: Listed['metadata'], want: SlackMetadata): boolean {
  const payload = metadata?.event_payload;
  if (metadata?.event_type !== want.event_type || !payload) return false;
  return Object.entries(want.event_payload).every(([k, v]) => String(payload[k]) === String(v));
}

/** Where the reply's pieces can start: the answered message's ts, or shortly before it arrived. */
function lookupStart(to: InboundMessage): string | undefined {
  const ts = parseMessageKey(to.id)?.ts;
  if (ts !== undefined) return ts;
  return to.receivedAt > CLOCK_MARGIN_MS ? ((to.receivedAt - CLOCK_MARGIN_MS) / 1000).toFixed(6) : undefined;
}

/** The history scope a conversation needs, from its id, when Slack's answer does not say. */
function historyScope(channel: string): string {
  if (channel.startsWith('D')) return 'im:history';
  return channel.startsWith('G') ? 'groups:history or mpim:history' : 'channels:history (groups:history for a private channel)';
}

function digest(piece: string): string {
  return createHash('sha256').update(piece).digest('hex').slice(0, 16);
}
