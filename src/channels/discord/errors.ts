import type { CallFailure } from '../kit/retry.js';
import type { WriteFailure } from '../kit/pieces.js';

/**
 * Discord REST failures, by cause. `classify` maps one HTTP response to one of them; the retry
 * helper (rest.ts) decides from the class alone. Messages name the route with any webhook or
 * interaction token replaced, so an error can be logged as it is.
 */

/** Discord answered with an error status. `code` is Discord's JSON error code (50027, 10008…), 0 when absent. */
export class DiscordApiError extends Error {
  override readonly name: string = 'DiscordApiError';
  constructor(
    readonly status: number,
    readonly code: number,
    readonly route: string,
    message: string,
  ) {
    super(`${route} → ${status}${code ? ` (${code})` : ''}: ${message}`);
  }
}

/** 429: nothing was done; the same request may be sent again after `retryAfterMs`. */
export class DiscordRateLimitError extends DiscordApiError {
  override readonly name = 'DiscordRateLimitError';
  constructor(
    route: string,
    readonly retryAfterMs: number,
    readonly global: boolean,
  ) {
    super(429, 0, route, `rate limited${global ? ' (global)' : ''}, retry after ${retryAfterMs} ms`);
  }
}

/** No answer: connection refused or reset, or a timeout. A write may or may not have happened. */
export class DiscordNetworkError extends Error {
  override readonly name = 'DiscordNetworkError';
  constructor(
    readonly route: string,
    cause: unknown,
  ) {
    super(`${route}: no response (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
  }
}

/** The route as it may be logged: webhook and interaction tokens replaced by `:token`. */
export function redactRoute(method: string, path: string): string {
  const clean = path
    .split('?')[0]!
    .replace(/\/webhooks\/(\d+)\/[^/]+/, '/webhooks/$1/:token')
    .replace(/\/interactions\/(\d+)\/[^/]+/, '/interactions/$1/:token');
  return `${method} ${clean}`;
}

/** One HTTP error response → one error class. `body` is the parsed JSON body, if any. */
export function classify(route: string, status: number, body: unknown, retryAfterHeader: string | null): DiscordApiError {
  const b = (typeof body === 'object' && body !== null ? body : {}) as { message?: unknown; code?: unknown; retry_after?: unknown; global?: unknown };
  if (status === 429) {
    // The body's retry_after is seconds with decimals; the header is whole seconds.
    const seconds = typeof b.retry_after === 'number' ? b.retry_after : Number(retryAfterHeader ?? '1');
    return new DiscordRateLimitError(route, Math.ceil(Math.max(0, Number.isFinite(seconds) ? seconds : 1) * 1000), b.global === true);
  }
  const message = typeof b.message === 'string' ? b.message : `HTTP ${status}`;
  return new DiscordApiError(status, typeof b.code === 'number' ? b.code : 0, route, message);
}

/**
 * The interaction's webhook no longer takes messages: its token expired (401 Invalid Webhook
 * Token) or the interaction or its response is unknown (404). The caller posts in the channel instead.
 */
export function interactionGone(err: unknown): boolean {
  return err instanceof DiscordApiError && (err.status === 401 || err.status === 404);
}

/** 404 Unknown Message (10008): the message was deleted (or never was). */
export function unknownMessage(err: unknown): boolean {
  return err instanceof DiscordApiError && err.status === 404 && err.code === 10008;
}

/**
 * What a failed message write means for a reply (see delivery/pieces.ts): 403/404/400 are
 * refusals for good (missing access, unknown channel, cannot message this user), and so is 413
 * (40005 Request entity too large: a file over the channel's upload limit); no answer or a 5xx
 * may have posted it; a 429 or a bad bot token (the operator fixes it) did not.
 */
export function discordWriteFailure(err: unknown): WriteFailure {
  if (err instanceof DiscordNetworkError) return 'unknown';
  if (err instanceof DiscordRateLimitError || !(err instanceof DiscordApiError)) return 'retry';
  if (err.status >= 500) return 'unknown';
  return REFUSALS.has(err.status) ? 'refused' : 'retry';
}

const REFUSALS = new Set([400, 403, 404, 413]);

/** What a failed call means for repeating it (the retry core decides; see ../retry.ts): a 5xx or no answer may have been performed. */
export function discordCallFailure(err: unknown): CallFailure {
  if (err instanceof DiscordRateLimitError) return { kind: 'rate_limited', retryAfterMs: err.retryAfterMs };
  if (err instanceof DiscordNetworkError || (err instanceof DiscordApiError && err.status >= 500)) return { kind: 'transient' };
  return { kind: 'permanent' };
}

/**
 * An error as it may be logged. discord.js's REST errors carry the request URL and body as
 * properties (an interaction's URL contains its token), so only these fields are kept.
 */
export function safeError(err: unknown): { name: string; message: string; status?: number; code?: number | string } {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const { status, code } = err as { status?: unknown; code?: unknown };
  return {
    name: err.name,
    message: err.message,
    ...(typeof status === 'number' && { status }),
    ...((typeof code === 'number' || typeof code === 'string') && { code }),
  };
}

/** The interaction's webhook stopped taking messages at this piece. */
export class InteractionGoneAt extends Error {
  constructor(readonly index: number) {
    super(`the interaction stopped taking messages at piece ${index}`);
  }
}

/**
 * A follow-up the webhook no longer knows (404 Unknown Message: someone deleted it). Not a
 * DiscordApiError, so it does not count as the whole interaction being gone.
 */
export class FollowUpGone extends Error {
  constructor(cause: unknown) {
    super('the follow-up message no longer exists', { cause });
  }
}
