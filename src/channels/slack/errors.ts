import { WebAPIHTTPError, WebAPIPlatformError, WebAPIRateLimitedError, WebAPIRequestError } from '@slack/web-api';
import type { WriteFailure } from '../kit/pieces.js';
import type { CallFailure } from '../kit/retry.js';

/**
 * What a failed Slack Web API call was (refused, rate limited, or an unknown outcome), and what
 * that means for repeating the call (slackCallFailure) and for a reply's piece (slackWriteFailure).
 */

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

/** What a classified failure means for repeating the call (the retry core decides; see ../retry.ts). */
export function slackCallFailure(err: unknown): CallFailure {
  if (err instanceof SlackRateLimited) return { kind: 'rate_limited', retryAfterMs: err.retryAfterMs };
  if (err instanceof SlackUnknownOutcome) return { kind: 'transient' };
  return { kind: 'permanent' };
}
