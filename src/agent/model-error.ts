import OpenAI from 'openai';
import type { ModelResponse } from './types.js';
import { ZERO_USAGE } from './compat.js';

type ModelError = NonNullable<ModelResponse['error']>;

/** Thrown by our own deadline so it can be told apart from the caller's abort. */
export class ModelTimeoutError extends Error {
  override readonly name = 'ModelTimeoutError';
  constructor(readonly ms: number) {
    super(`model call timed out after ${ms} ms`);
  }
}

export function errorResponse(error: ModelError): ModelResponse {
  return { message: { role: 'assistant', content: '' }, stopReason: 'error', usage: { ...ZERO_USAGE }, error };
}

export function abortedResponse(): ModelResponse {
  return { message: { role: 'assistant', content: '' }, stopReason: 'aborted', usage: { ...ZERO_USAGE } };
}

/** Classifies anything the client threw: retryable for 408/409/429/5xx, timeouts and connection errors. */
export function classifyError(err: unknown): ModelError {
  if (err instanceof ModelTimeoutError) return { message: err.message, retryable: true };
  if (err instanceof OpenAI.APIConnectionTimeoutError) return { message: 'model call timed out', retryable: true };
  if (err instanceof OpenAI.APIConnectionError) {
    return { message: `could not reach the model endpoint: ${causeText(err)}`, retryable: true };
  }
  if (err instanceof OpenAI.APIError) {
    const status = err.status;
    const headers = err.headers instanceof Headers ? err.headers : undefined;
    const retryAfterMs = headers ? parseRetryAfter(headers) : undefined;
    const detail = apiMessage(err);
    if (status === undefined) {
      // An error event inside a stream: no HTTP status; the server gave up mid-answer.
      return { message: `model stream failed: ${detail}`, retryable: true };
    }
    const forced = headers?.get('x-should-retry');
    const retryable = forced === 'true' ? true : forced === 'false' ? false : isRetryableStatus(status);
    return { message: describeStatus(status, detail), retryable, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
  if (err instanceof Error && /terminated|socket|ECONNRESET|EPIPE|other side closed/i.test(`${err.message} ${causeText(err)}`)) {
    // undici reports a connection dropped mid-body as "terminated".
    return { message: `model connection dropped: ${causeText(err)}`, retryable: true };
  }
  return { message: `model call failed: ${err instanceof Error ? err.message : String(err)}`, retryable: false };
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function describeStatus(status: number, detail: string): string {
  switch (status) {
    case 401:
      return `model endpoint refused the API key (401)${detail ? `: ${detail}` : ''}`;
    case 403:
      return `model endpoint denied access (403)${detail ? `: ${detail}` : ''}`;
    case 404:
      return `model endpoint not found (404; check AGENT_MODEL and OPENAI_BASE_URL)${detail ? `: ${detail}` : ''}`;
    case 429:
      return `model endpoint is rate limiting (429)${detail ? `: ${detail}` : ''}`;
    default:
      return status >= 500
        ? `model endpoint failed (${status})${detail ? `: ${detail}` : ''}`
        : `model endpoint rejected the request (${status})${detail ? `: ${detail}` : ''}`;
  }
}

/** The server's own words, without the SDK's "429 " prefix. */
function apiMessage(err: InstanceType<typeof OpenAI.APIError>): string {
  const body = err.error as { message?: unknown } | undefined;
  if (body && typeof body.message === 'string') return body.message;
  return err.message.replace(/^\d{3}\s+/, '').replace(/^status code \(no body\)$/, '');
}

/** The deepest useful message: "fetch failed: connect ECONNREFUSED 127.0.0.1:9". */
function causeText(err: Error): string {
  const parts: string[] = [];
  let cur: unknown = (err as { cause?: unknown }).cause ?? err;
  for (let i = 0; cur instanceof Error && i < 4; i++) {
    parts.push(cur.message);
    cur = (cur as { cause?: unknown }).cause;
  }
  return parts.join(': ') || err.message;
}

/**
 * `retry-after-ms` (OpenAI's, milliseconds) wins over `retry-after` (seconds, fractional
 * accepted, or an HTTP date). Negative or unparsable values are ignored.
 */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const n = Number(ms);
    if (Number.isFinite(n) && n >= 0) return n;
  }
  const ra = headers.get('retry-after');
  if (ra === null || ra.trim() === '') return undefined;
  const secs = Number(ra);
  if (Number.isFinite(secs)) return secs >= 0 ? Math.round(secs * 1000) : undefined;
  const date = Date.parse(ra);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * A response whose tool calls repeat an id is malformed: results are matched to calls by id, and
 * a decision on one call (an approval) must never be taken for another. Retried like a server error.
 */
export function refuseDuplicateCallIds(response: ModelResponse): ModelResponse {
  const ids = (response.message.tool_calls ?? []).map((c) => c.id);
  const repeated = ids.find((id, i) => ids.indexOf(id) !== i);
  if (repeated === undefined) return response;
  return {
    ...errorResponse({ message: `malformed model response: tool call id "${repeated.slice(0, 80)}" appears more than once`, retryable: true }),
    usage: response.usage,
  };
}
