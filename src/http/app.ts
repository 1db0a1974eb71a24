import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Redis } from 'ioredis';
import type { InboundChannel } from '../channels/registry.js';
import { countWorkers } from '../queue/worker-heartbeat.js';
import { failedAttemptsOf, presentsToken } from './auth.js';

export interface HealthSources {
  redis: Redis;
  /** QUEUE_PREFIX: whose workers count (worker-heartbeat.ts). */
  prefix: string;
  channels: () => readonly InboundChannel[];
  /** True once the gateway is shutting down: not ready, whatever else is fine. */
  draining: () => boolean;
  /** MCP servers some worker reports as not connected (one line each). */
  toolServerProblems?: () => Promise<string[]>;
  /** ADMIN_TOKEN: only its holders see why the gateway is (not) ready. */
  adminToken?: string | undefined;
}

/** A readiness probe answers within its own deadline even when Redis hangs. */
const READY_TIMEOUT_MS = 2_000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * `trustProxy` is TRUST_PROXY (config.http.trustProxy): which proxies' X-Forwarded-For/-Proto
 * set req.ip (the address the admin limiter counts) and req.secure (the cookie's Secure).
 */
export function createHttpApp(trustProxy: false | number | string[] = false): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxy);
  return app;
}

/**
 * The last handler: any error (a body that is not JSON, a route that threw) answers a short JSON
 * body with its status (500 when it has none), never Express's page with the stack and paths.
 * Mount it after every route.
 */
export function mountErrorHandler(app: Express, log: { warn(obj: object, msg: string): void }): void {
  app.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    const status = httpStatusOf(err);
    log.warn({ method: req.method, path: req.path, status, err: err instanceof Error ? err.message : String(err) }, 'http request failed');
    res.status(status).json({ ok: false, error: status >= 500 ? 'internal error' : err instanceof Error ? err.message : 'bad request' });
  });
}

function httpStatusOf(err: unknown): number {
  const status = (err as { status?: unknown; statusCode?: unknown } | null)?.status ?? (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}

/** How long a refused platform is asked to wait before delivering again. */
const DRAIN_RETRY_AFTER_S = 5;

export interface DrainSwitch {
  readonly draining: boolean;
  drain(): void;
}

const isAdminPath = (path: string) => path === '/admin' || path.startsWith('/admin/');

/**
 * Mount before any webhook route. Once draining, every new inbound event (a POST outside /admin)
 * is answered 503 with Retry-After, so the platform delivers it again, to another gateway once
 * the load balancer sees /readyz fail, instead of to a process about to exit. Health, metrics
 * and the admin API keep working for the operators.
 */
export function mountDrainSwitch(app: Express): DrainSwitch {
  let draining = false;
  app.use((req, res, next) => {
    if (!draining || req.method !== 'POST' || isAdminPath(req.path)) return next();
    // Closing the connection makes the platform's next attempt open a new one, which the balancer may send elsewhere.
    res.set({ 'Retry-After': String(DRAIN_RETRY_AFTER_S), Connection: 'close' });
    res.status(503).json({ ok: false, error: 'this gateway is shutting down, deliver again later' });
  });
  return {
    get draining() {
      return draining;
    },
    drain() {
      draining = true;
    },
  };
}

/**
 * /healthz: the process is alive. /readyz: the gateway is not draining, Redis answers, every
 * enabled channel is connected (with when it last received an event), at least one worker is
 * connected to the queue and no worker reports an MCP server down; 503 otherwise. Anyone gets
 * `{"ready": …}`; the reasons and details (server names, errors) only with an admin credential.
 */
export function mountHealth(app: Express, sources: HealthSources): void {
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/readyz', async (req, res) => {
    const draining = sources.draining();
    const problems = draining ? ['draining: shutting down, not taking new events'] : [];
    let redis = 'ok';
    let workers = 0;
    try {
      await withTimeout(sources.redis.ping(), READY_TIMEOUT_MS, 'Redis did not answer PING');
      workers = await withTimeout(countWorkers(sources.redis, sources.prefix), READY_TIMEOUT_MS, 'Redis did not list the workers');
      if (workers === 0) problems.push('no worker is connected to the queue');
      if (sources.toolServerProblems)
        problems.push(...(await withTimeout(sources.toolServerProblems(), READY_TIMEOUT_MS, 'Redis did not list the MCP servers')));
    } catch (err) {
      redis = err instanceof Error ? err.message : String(err);
      problems.push(`redis: ${redis}`);
    }
    const channels = Object.fromEntries(
      sources.channels().map((c) => {
        const h = c.health();
        if (!h.connected) problems.push(`${c.name}: ${h.detail ?? 'not connected'}`);
        return [c.name, { ...h, ...(h.lastEventAt !== undefined && { lastEventAt: new Date(h.lastEventAt).toISOString() }) }];
      }),
    );
    const ready = problems.length === 0;
    const detailed = sources.adminToken !== undefined && presentsToken(req, sources.adminToken, failedAttemptsOf(app));
    res.status(ready ? 200 : 503).json(detailed ? { ready, ok: ready, problems, draining, redis, workers, channels } : { ready });
  });
}
