import { withRetries, type CallRetry } from '../kit/retry.js';
import { classifySlackError, slackCallFailure } from './errors.js';
import { WebClient, type FetchFunction, type Logger as SlackLogger } from '@slack/web-api';

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

/**
 * A Slack call's retry options (the one RetryOptions, less its classifier): `idempotent` when
 * repeating cannot do it twice (chat.update with the same text, reactions, chat.delete); a write
 * that is not (chat.postMessage) is repeated only after a 429, which proves it was not done.
 */
export type CallOptions = CallRetry;

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
