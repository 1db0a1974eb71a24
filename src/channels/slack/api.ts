import type { WriteFailure } from '../kit/pieces.js';
import { withRetries, type CallFailure, type CallRetry } from '../kit/retry.js';
import { WebAPIHTTPError, WebAPIPlatformError, WebAPIRateLimitedError, WebAPIRequestError, WebClient, type FetchFunction, type Logger as SlackLogger } from '@slack/web-api';

/** Slack's Web API base when SLACK_API_URL is not set. */
export const SLACK_API_URL = 'https://slack.com/api/';
export const REQUEST_TIMEOUT_MS = 20_000;

/** The WebClient base must end with a slash: method names are appended to it. */
export function apiBase(apiUrl: string | undefined): string {
  const base = apiUrl ?? SLACK_API_URL;
  return base.endsWith('/') ? base : `${base}/`;
}

/** `fetch` replaces the transport, and then owns the timeouts: the client's own (one for every request) is off. */
export interface WebClientTransport {
  fetch?: FetchFunction;
}

/**
 * A WebClient that never retries by itself: a write whose response was lost must not be sent
 * again behind our back (it may have been posted), and a 429 is handed to slackCall, which
 * knows whether the call may be repeated.
 */
export function createWebClient(token: string, apiUrl: string | undefined, logger?: SlackLogger, transport: WebClientTransport = {}): WebClient {
  return new WebClient(token, {
    slackApiUrl: apiBase(apiUrl),
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    timeout: transport.fetch ? 0 : REQUEST_TIMEOUT_MS,
    ...(logger && { logger }),
    ...(transport.fetch && { fetch: transport.fetch }),
  });
}

/** Slack refused the call (`ok: false`): nothing happened; `code` is Slack's error string. */
export class SlackRefused extends Error {
  override readonly name = 'SlackRefused';
  constructor(
    readonly method: string,
    readonly code: string,
  ) {
    super(`Slack ${method} failed: ${code}`);
  }
}

/** Slack answered 429 (or `ratelimited`): the call was not done; it may be sent again after `retryAfterMs`. */
export class SlackRateLimited extends Error {
  override readonly name = 'SlackRateLimited';
  constructor(
    readonly method: string,
    readonly retryAfterMs: number,
  ) {
    super(`Slack ${method} is rate limited; retry after ${Math.round(retryAfterMs / 1000)} s`);
  }
}

/** No usable answer (network error, timeout, 5xx, internal_error): the call may or may not have taken effect. */
export class SlackUnknownOutcome extends Error {
  override readonly name = 'SlackUnknownOutcome';
  constructor(
    readonly method: string,
    cause: unknown,
  ) {
    super(`Slack ${method}: no answer (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
  }
}

export type SlackCallError = SlackRefused | SlackRateLimited | SlackUnknownOutcome;

/** Slack errors that mean "try again later", with no promise about what happened. */
const TRANSIENT_CODES = new Set(['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout']);

/** Maps whatever the WebClient threw to one of our three causes. */
export function classifySlackError(method: string, err: unknown): SlackCallError {
  if (err instanceof SlackRefused || err instanceof SlackRateLimited || err instanceof SlackUnknownOutcome) return err;
  if (err instanceof WebAPIRateLimitedError) return new SlackRateLimited(method, err.retryAfter * 1000);
  if (err instanceof WebAPIPlatformError) {
    const code = err.data.error;
    if (code === 'ratelimited') {
      const after = Number((err.data.response_metadata as { retryAfter?: number } | undefined)?.retryAfter ?? 1);
      return new SlackRateLimited(method, after * 1000);
    }
    return TRANSIENT_CODES.has(code) ? new SlackUnknownOutcome(method, err) : new SlackRefused(method, code);
  }
  if (err instanceof WebAPIHTTPError || err instanceof WebAPIRequestError) return new SlackUnknownOutcome(method, err);
  return new SlackUnknownOutcome(method, err);
}

/** Codes that need the operator (a token), not a different reply: the reply is kept for later. */
const CREDENTIAL_CODES = new Set(['invalid_auth', 'not_authed', 'token_revoked', 'token_expired', 'account_inactive']);

/** What a failed chat.postMessage means for a reply (see delivery/pieces.ts). */
export function slackWriteFailure(err: unknown): WriteFailure {
  if (err instanceof SlackUnknownOutcome) return 'unknown';
  if (err instanceof SlackRefused) return CREDENTIAL_CODES.has(err.code) ? 'retry' : 'refused';
  return 'retry';
}

/**
 * A Slack call's retry options (the one RetryOptions, less its classifier): `idempotent` when
 * repeating cannot do it twice (chat.update with the same text, reactions, chat.delete); a write
 * that is not (chat.postMessage) is repeated only after a 429, which proves it was not done.
 */
export type CallOptions = CallRetry;

/** What a classified failure means for repeating the call (the retry core decides; see ../retry.ts). */
export function slackCallFailure(err: unknown): CallFailure {
  if (err instanceof SlackRateLimited) return { kind: 'rate_limited', retryAfterMs: err.retryAfterMs };
  if (err instanceof SlackUnknownOutcome) return { kind: 'transient' };
  return { kind: 'permanent' };
}

/**
 * Slack Web API calls through the retry core: honours Retry-After on 429, backs off on transient
 * failures of idempotent calls, never repeats a write whose outcome is unknown, and throws what it
 * does not retry as SlackRefused / SlackRateLimited / SlackUnknownOutcome.
 */
export function slackCall<T>(method: string, call: () => Promise<T>, options: CallOptions): Promise<T> {
  const classified = () =>
    call().catch((raw: unknown) => {
      throw classifySlackError(method, raw);
    });
  return withRetries(classified, {
    classify: slackCallFailure,
    attempts: 4,
    maxWaitMs: 30_000,
    ...options,
  });
}
