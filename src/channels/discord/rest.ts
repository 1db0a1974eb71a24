import { withRetries as retryCall, type CallRetry } from '../kit/retry.js';
import { classify, discordCallFailure, DiscordNetworkError, redactRoute } from './errors.js';
import { anySignal } from '../../lib/abort.js';

export const DISCORD_API = 'https://discord.com/api';
export const API_VERSION = 10;

/**
 * `idempotent`: the request may be sent twice without doing its work twice (GET, PUT, PATCH,
 * DELETE, and a message POST with `enforce_nonce`): also retried after a 5xx or a lost response.
 * Otherwise only a 429 (where Discord did nothing) is retried. `maxWaitMs` (default 60 s): a 429
 * asking to wait longer is not waited for, its error is thrown.
 */
export type RetryDefaults = Omit<CallRetry, 'idempotent'>;

/** Discord calls through the retry core (../retry.ts), with Discord's classifier. */
export function withRetries<T>(call: () => Promise<T>, options: CallRetry): Promise<T> {
  return retryCall(call, { attempts: 5, maxWaitMs: 60_000, ...options, classify: discordCallFailure });
}

export interface DiscordRestOptions {
  token: string;
  /** The REST base without the version (discord.js `rest.api`): https://discord.com/api. */
  apiUrl?: string | undefined;
  timeoutMs?: number;
  retry?: RetryDefaults;
}

/** A file sent with a message: the `files[n]` part of a multipart/form-data request. */
export interface UploadPart {
  name: string;
  data: Uint8Array;
  contentType: string;
}

export interface RequestOptions {
  body?: unknown;
  /**
   * Sends the request as multipart/form-data (Discord's "Uploading Files"): `body` becomes the
   * `payload_json` part and file n the `files[n]` part its `attachments` entry with `id: n` names.
   */
  files?: UploadPart[];
  /** Interaction callbacks and interaction webhooks are authorised by the token in their path. */
  auth?: boolean;
  idempotent?: boolean;
  /** Overrides the client's timeout (an upload of megabytes takes longer than a JSON call). */
  timeoutMs?: number;
  /** Stops the request (and its retries): the caller gave up, e.g. the run was cancelled. */
  signal?: AbortSignal;
  /**
   * Overrides the client's retry rule for this request: a streamed answer's write does not wait
   * out a 429 (`maxWaitMs: 0`), because the next write brings newer text anyway.
   */
  retry?: Pick<CallRetry, 'attempts' | 'maxWaitMs'>;
}

/**
 * Discord's REST API over plain fetch (no gateway, so it works in a worker process): JSON in
 * (multipart/form-data when a message carries files) and JSON out, one error class per failure,
 * retries through `withRetries`.
 */
export class DiscordRest {
  readonly base: string;
  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly retry: RetryDefaults;

  constructor(options: DiscordRestOptions) {
    this.base = `${(options.apiUrl ?? DISCORD_API).replace(/\/+$/, '')}/v${API_VERSION}`;
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.retry = options.retry ?? {};
  }

  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const idempotent = options.idempotent ?? method !== 'POST';
    return withRetries(() => this.once<T>(method, path, options), { ...this.retry, ...options.retry, idempotent });
  }

  private async once<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const route = redactRoute(method, path);
    const headers: Record<string, string> = { 'user-agent': 'DiscordBot (https://github.com/switchboard, 0.1) Switchboard' };
    if (options.auth !== false) headers.authorization = `Bot ${this.token}`;
    // fetch sets a multipart body's content-type itself (it carries the boundary).
    if (options.body !== undefined && !options.files) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs);
    const payload = bodyOf(options);
    const linked = anySignal(options.signal ? [timeout, options.signal] : [timeout]);
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers,
        ...(payload !== undefined && { body: payload }),
        signal: linked.signal,
      });
      text = await res.text().catch(() => '');
    } catch (err) {
      // The caller's own abort is not a lost response: nothing is retried after it.
      if (options.signal?.aborted) throw options.signal.reason;
      throw new DiscordNetworkError(route, err);
    } finally {
      linked.dispose();
    }
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (!res.ok) throw classify(route, res.status, body, res.headers.get('retry-after'));
    return body as T;
  }
}

/** The request body: JSON, or the multipart form Discord takes files in (built anew for each attempt). */
function bodyOf(options: RequestOptions): string | FormData | undefined {
  if (!options.files) return options.body === undefined ? undefined : JSON.stringify(options.body);
  const form = new FormData();
  if (options.body !== undefined) form.append('payload_json', JSON.stringify(options.body));
  for (const [n, file] of options.files.entries()) {
    // File bytes are read from disk: never a view of a SharedArrayBuffer, which Blob refuses.
    form.append(`files[${n}]`, new Blob([file.data as Uint8Array<ArrayBuffer>], { type: file.contentType }), file.name);
  }
  return form;
}
