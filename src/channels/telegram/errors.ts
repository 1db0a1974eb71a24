import { GrammyError, HttpError, type Transformer } from 'grammy';
import type { WriteFailure } from '../kit/pieces.js';
import { withRetries, type CallFailure, type CallRetry } from '../kit/retry.js';

/**
 * What a failed Bot API call means for the next decision. One function maps grammY's errors
 * (GrammyError: Telegram answered with an error; HttpError: the request failed on the way) to
 * one of these, so the retry helper and the adapter never read descriptions themselves.
 */
export type TelegramFailure =
  /** 429: Telegram did not perform the call; it may be repeated after `retryAfterMs`. */
  | { kind: 'rate_limited'; retryAfterMs: number }
  /** 400 "message is not modified": the edit is already in place. */
  | { kind: 'not_modified' }
  /** 400 "can't parse entities": the formatted text was refused; plain text will do. */
  | { kind: 'bad_entities' }
  /** 400 "message is too long" (after entity parsing). */
  | { kind: 'too_long' }
  /** 400: the group became a supergroup with a new chat id. */
  | { kind: 'migrated'; chatId: number }
  /** 400 "message to edit/delete not found" (or can't be edited any more). */
  | { kind: 'gone' }
  /** 413 "Request Entity Too Large": the upload is over what the Bot API server takes; nothing was posted. */
  | { kind: 'too_large' }
  /** 400 PHOTO_INVALID_DIMENSIONS: sendPhoto refused the image's shape before posting; it can still go as a document. */
  | { kind: 'bad_photo' }
  /** 401 / 404 on the token: the bot token is wrong or revoked. */
  | { kind: 'unauthorized' }
  /** 409 on getUpdates: another poller, or a webhook, holds this bot's updates. */
  | { kind: 'conflict' }
  /** The request never reached Telegram (refused connection, DNS): safe to send again. */
  | { kind: 'unsent' }
  /** 5xx, a reset connection, a timeout: Telegram may or may not have performed the call. */
  | { kind: 'transient' }
  | { kind: 'fatal' };

/** Connection errors that happen before a request is written: nothing reached Telegram. */
const UNSENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export function classifyTelegramError(err: unknown): TelegramFailure {
  if (err instanceof GrammyError) {
    const code = err.error_code;
    const text = err.description.toLowerCase();
    if (code === 429) return { kind: 'rate_limited', retryAfterMs: Math.max(1, err.parameters.retry_after ?? 1) * 1000 };
    if (code === 401 || code === 404) return { kind: 'unauthorized' };
    if (code === 409) return { kind: 'conflict' };
    if (code === 413) return { kind: 'too_large' };
    if (code >= 500) return { kind: 'transient' };
    if (err.parameters.migrate_to_chat_id !== undefined) return { kind: 'migrated', chatId: err.parameters.migrate_to_chat_id };
    if (text.includes('message is not modified')) return { kind: 'not_modified' };
    if (text.includes("can't parse entities") || text.includes('unsupported start tag') || text.includes("can't find end tag")) return { kind: 'bad_entities' };
    if (text.includes('message is too long') || text.includes('text is too long')) return { kind: 'too_long' };
    if (text.includes('photo_invalid_dimensions')) return { kind: 'bad_photo' };
    if (/message to (edit|delete) not found|message can't be (edited|deleted)|message_id_invalid/.test(text)) return { kind: 'gone' };
    return { kind: 'fatal' };
  }
  if (err instanceof HttpError) {
    const inner = err.error as { code?: string; errno?: string; name?: string } | undefined;
    const code = inner?.code ?? inner?.errno;
    return code !== undefined && UNSENT_CODES.has(code) ? { kind: 'unsent' } : { kind: 'transient' };
  }
  return { kind: 'fatal' };
}

/**
 * What a failed post (sendMessage, or an upload) means for a reply: Telegram refused for good
 * (bot blocked or removed, chat not found, a file too large, a request it will never accept),
 * may have performed it, or surely did not. A wrong token is worth retrying: the operator fixes
 * it and the reply still goes out.
 */
export function telegramWriteFailure(err: unknown): WriteFailure {
  if (!(err instanceof GrammyError) && !(err instanceof HttpError)) return 'retry';
  switch (classifyTelegramError(err).kind) {
    case 'transient':
      return 'unknown';
    case 'fatal':
    case 'gone':
    case 'bad_entities':
    case 'too_long':
    case 'too_large':
    case 'bad_photo':
      return 'refused';
    default:
      return 'retry';
  }
}

/** A short, token-free description of a failed call for logs and thrown errors. */
export function describeTelegramError(err: unknown): string {
  if (err instanceof GrammyError) return `${err.method}: ${err.error_code} ${err.description}`;
  if (err instanceof HttpError) {
    const inner = err.error as { code?: string; message?: string } | undefined;
    return `${err.message}${inner?.code ? ` (${inner.code})` : ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** 500 ms doubling to 10 s: a Bot API server restarting takes a few seconds. */
const BACKOFF_MS = [500, 1_000, 2_000, 4_000, 8_000, 10_000];

/** What a failed Bot API call means for repeating it (the retry core decides; see ../retry.ts). */
export function telegramCallFailure(err: unknown): CallFailure {
  const failure = classifyTelegramError(err);
  if (failure.kind === 'rate_limited' || failure.kind === 'unsent' || failure.kind === 'transient') return failure;
  return { kind: 'permanent' };
}

/** Outbound Bot API calls through the retry core, with Telegram's classifier. */
/**
 * `idempotent`: the call may be repeated when Telegram might already have performed it (an
 * edit, a delete, getFile); a sendMessage is not, since repeating it after a lost response can post twice.
 */
export function withTelegramRetries<T>(call: () => Promise<T>, options: CallRetry): Promise<T> {
  return withRetries(call, { attempts: 4, maxWaitMs: 300_000, backoffMs: BACKOFF_MS, ...options, classify: telegramCallFailure });
}

/** grammY types its signals with the abort-controller shim; a native AbortSignal is what node-fetch checks for at run time. */
export type GrammySignal = NonNullable<Parameters<import('grammy').Api['getMe']>[0]>;
export const grammySignal = (signal: AbortSignal): GrammySignal => signal as unknown as GrammySignal;

/**
 * A grammY transformer that strips the underlying fetch error from a failed request: node-fetch
 * puts the request URL, which holds the bot token, in its message, and a logged error object
 * would carry it. What is kept is the error code the classification needs.
 */
export const redactNetworkErrors: Transformer = async (prev, method, payload, signal) => {
  try {
    return await prev(method, payload, signal);
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    const inner = err.error as { code?: string; errno?: string; name?: string } | undefined;
    const code = inner?.code ?? inner?.errno;
    throw new HttpError(err.message, Object.assign(new Error(code ?? inner?.name ?? 'network error'), code === undefined ? {} : { code }));
  }
};
