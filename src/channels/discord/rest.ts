import { setTimeout as delay } from 'node:timers/promises';
import { classify, DiscordApiError, DiscordNetworkError, DiscordRateLimitError, redactRoute } from './errors.js';

export const DISCORD_API = 'https://discord.com/api';
export const API_VERSION = 10;

export interface RetryOptions {
  /**
   * The request may be sent twice without doing its work twice (GET, PUT, PATCH, DELETE, and a
   * message POST with `enforce_nonce`): also retried after a 5xx or a lost response. Otherwise
   * only a 429 (where Discord did nothing) is retried.
   */
  idempotent: boolean;
  attempts?: number;
  /** A 429 asking to wait longer than this is not waited for: the error is thrown. */
  maxRetryAfterMs?: number;
  sleep?: (ms: number) => Promise<unknown>;
}

const BACKOFF_MS = [500, 1_500, 4_000];

/**
 * The one classify-then-retry rule for Discord calls: wait out a 429 for as long as Discord asks
 * (up to a cap), back off on a 5xx or a lost response only when sending twice is harmless, and
 * rethrow everything else at once.
 */
export async function withRetries<T>(call: () => Promise<T>, options: RetryOptions): Promise<T> {
  const { idempotent, attempts = 5, maxRetryAfterMs = 60_000, sleep = delay } = options;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= attempts) throw err;
      if (err instanceof DiscordRateLimitError) {
        if (err.retryAfterMs > maxRetryAfterMs) throw err;
        await sleep(err.retryAfterMs);
        continue;
      }
      const transient = err instanceof DiscordNetworkError || (err instanceof DiscordApiError && err.status >= 500);
      if (!transient || !idempotent) throw err;
      await sleep(BACKOFF_MS[Math.min(attempt - 1, BACKOFF_MS.length - 1)]!);
    }
  }
}

export interface DiscordRestOptions {
  token: string;
  /** The REST base without the version (discord.js `rest.api`): https://discord.com/api. */
  apiUrl?: string | undefined;
  timeoutMs?: number;
  retry?: Omit<RetryOptions, 'idempotent'>;
}

export interface RequestOptions {
  body?: unknown;
  /** Interaction callbacks and interaction webhooks are authorised by the token in their path. */
  auth?: boolean;
  idempotent?: boolean;
}

/**
 * Discord's REST API over plain fetch (no gateway, so it works in a worker process): JSON in
 * and out, one error class per failure, retries through `withRetries`.
 */
export class DiscordRest {
  readonly base: string;
  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly retry: Omit<RetryOptions, 'idempotent'>;

  constructor(options: DiscordRestOptions) {
    this.base = `${(options.apiUrl ?? DISCORD_API).replace(/\/+$/, '')}/v${API_VERSION}`;
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.retry = options.retry ?? {};
  }

  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const idempotent = options.idempotent ?? method !== 'POST';
    return withRetries(() => this.once<T>(method, path, options), { ...this.retry, idempotent });
  }

  private async once<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const route = redactRoute(method, path);
    const headers: Record<string, string> = { 'user-agent': 'DiscordBot (https://github.com/switchboard, 0.1) Switchboard' };
    if (options.auth !== false) headers.authorization = `Bot ${this.token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers,
        ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      throw new DiscordNetworkError(route, err);
    }
    const text = await res.text().catch(() => '');
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
