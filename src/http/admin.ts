import { randomUUID } from 'node:crypto';
import express, { type Express, type RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import { decodeSessionKey } from '../channels/session-key.js';
import { PLATFORMS } from '../channels/registry.js';
import type { InboundMessage } from '../channels/types.js';
import type { SessionControl } from '../session/control.js';
import type { SessionKeys } from '../queue/keys.js';
import type { Producer } from '../queue/producer.js';
import type { RunQueue } from '../queue/run-queue.js';
import { runViewPath, type RunStore } from '../run/record.js';
import {
  ADMIN_COOKIE,
  ADMIN_SESSION_MS,
  adminCookieValue,
  adminGuard,
  checkToken,
  failedAttemptsOf,
  sameSiteChanges,
  tooManyFailures,
  type FailedAttempts,
} from './auth.js';
import { escapeHtml, page } from './html.js';
import { renderRunView } from './run-view.js';
import { pairingRouter } from './pairing-api.js';
import type { PairingAdmin } from '../access/pairing-admin.js';
import { boardApiGuard } from './query-guard.js';
import { schedulesRouter } from './schedules-api.js';
import type { ScheduleBook } from '../schedules/schedule-book.js';
import type { MemoryAdmin } from '../memory/admin.js';
import { identitiesRouter, memoryRouter } from './memory-api.js';
import { mountMemoryPage } from './memory-page.js';

export interface AdminDeps {
  token: string | undefined;
  readonly: boolean;
  metricsPublic: boolean;
  queue: RunQueue;
  redis: Redis;
  keys: SessionKeys;
  control: SessionControl;
  producer: Producer;
  runs: RunStore;
  metrics: Metrics;
  pairing: PairingAdmin;
  schedules: ScheduleBook;
  /** People's memory and linked identities (/admin/api/memory, /admin/api/identities, /admin/memory). */
  memory?: MemoryAdmin;
  log: Logger;
}

const DASHBOARD = '/admin/queues';

/** The operators' surface: dashboard, run view, admin API, metrics — all behind one guard. */
export function mountAdmin(app: Express, deps: AdminDeps): void {
  const failures = failedAttemptsOf(app);
  const guard = adminGuard(deps.token, failures);
  mountLogin(app, deps.token, failures);

  const board = new ExpressAdapter();
  board.setBasePath(DASHBOARD);
  createBullBoard({
    queues: [
      new BullMQAdapter(deps.queue, {
        readOnlyMode: deps.readonly,
        allowRetries: !deps.readonly,
        displayName: 'agent runs',
        description: 'One job per agent run of a session turn',
        externalJobUrl: (job) => ({ displayText: 'run view', href: `/admin/jobs/${encodeURIComponent(String(job.id))}` }),
      }),
      // Its job schedulers are the schedules; each job one firing (the run it queues is in "agent runs").
      new BullMQAdapter(deps.schedules.queue, {
        readOnlyMode: true,
        displayName: 'schedule firings',
        description: 'One job scheduler per schedule; one job per firing, which queues the scheduled turn',
      }),
    ],
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'Switchboard' } },
  });
  app.use(DASHBOARD, ...guard, boardApiGuard(), board.getRouter());

  app.get('/admin/jobs/:id', ...guard, async (req, res) => {
    const job = await deps.queue.getJob(String(req.params.id));
    if (!job?.data.runId) return void res.status(404).type('text/plain').send('This job has no run yet.\n');
    res.redirect(runViewPath(job.data.runId));
  });

  app.get('/admin/runs/:id', ...guard, async (req, res) => {
    const run = await deps.runs.get(String(req.params.id));
    const wantsJson = req.query.format === 'json' || req.accepts(['html', 'json']) === 'json';
    if (!run)
      return void res
        .status(404)
        .type(wantsJson ? 'application/json' : 'text/plain')
        .send(wantsJson ? { error: 'no such run' } : 'No such run (records are kept 14 days).\n');
    if (wantsJson) return void res.json(run);
    res.type('html').send(renderRunView(run, { dashboard: `${DASHBOARD}/queue/${encodeURIComponent(deps.queue.name)}/${encodeURIComponent(run.jobId)}` }));
  });

  const api = express.Router();
  api.use(express.json({ limit: '16kb' }));
  const writable: RequestHandler = (_req, res, next) => {
    if (deps.readonly) return void res.status(403).json({ error: 'read-only mode (ADMIN_READONLY=1)' });
    next();
  };
  api.get('/sessions', async (_req, res) => res.json({ sessions: await activeSessions(deps) }));
  api.post('/sessions/:session/cancel', writable, async (req, res) => {
    const stopped = await deps.control.stop(String(req.params.session));
    deps.log.info({ session: req.params.session, stopped }, 'operator cancel');
    res.status(stopped ? 202 : 409).json({ stopped, ...(stopped ? {} : { error: 'no run is active in this session' }) });
  });
  api.post('/sessions/:session/reset', writable, async (req, res) => {
    let parts;
    try {
      parts = decodeSessionKey(String(req.params.session));
    } catch (err) {
      return void res.status(400).json({ error: err instanceof Error ? err.message : String(err) });
    }
    // A reset queued for a platform no worker can answer would fail forever.
    if (!PLATFORMS.has(parts.platform))
      return void res.status(400).json({ error: `unknown platform "${parts.platform}" (one of ${[...PLATFORMS].join(', ')})` });
    const id = randomUUID();
    const message: InboundMessage = {
      v: 1,
      id,
      ...parts,
      sender: { id: 'operator' },
      text: '/reset',
      command: 'reset',
      attachments: [],
      eventId: `operator-reset-${id}`,
      receivedAt: Date.now(),
    };
    await deps.producer.enqueue(message);
    deps.log.info({ session: req.params.session }, 'operator reset');
    res.status(202).json({ queued: true });
  });
  api.post('/queue/pause', writable, async (_req, res) => {
    await deps.queue.pause();
    res.json({ paused: true });
  });
  api.post('/queue/resume', writable, async (_req, res) => {
    await deps.queue.resume();
    res.json({ paused: false });
  });
  api.use('/pairing', pairingRouter(deps.pairing, writable));
  api.use('/schedules', schedulesRouter(deps.schedules, writable, deps.log));
  if (deps.memory) {
    api.use('/memory', memoryRouter(deps.memory, writable, deps.log));
    api.use('/identities', identitiesRouter(deps.memory, writable, deps.log));
    mountMemoryPage(app, deps.memory, guard, deps.readonly, deps.log);
  }
  app.use('/admin/api', ...guard, api);

  mountMetrics(app, deps.metrics, deps.metricsPublic ? [] : guard);
}

/** /metrics in Prometheus format, behind `guard` (empty when METRICS_PUBLIC=1). */
export function mountMetrics(app: Express, metrics: Metrics, guard: RequestHandler[]): void {
  app.get('/metrics', ...guard, async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}

function mountLogin(app: Express, token: string | undefined, failures: FailedAttempts): void {
  const form = (error = '') =>
    page(
      'Switchboard admin',
      `<h1>Switchboard admin</h1>${error ? `<p style="color:#8a1c1c">${escapeHtml(error)}</p>` : ''}
<form class="login" method="post" action="/admin/login"><label>Admin token<input type="password" name="token" autocomplete="current-password" autofocus></label><button type="submit">Log in</button></form>`,
    );
  app.get('/admin/login', (_req, res) => void res.type('html').send(form(token ? '' : 'The admin surface is off: set ADMIN_TOKEN.')));
  app.post('/admin/login', sameSiteChanges, express.urlencoded({ extended: false, limit: '4kb' }), (req, res) => {
    const given = typeof req.body?.token === 'string' ? req.body.token : '';
    if (!token) return void res.status(401).type('html').send(form('The admin surface is off: set ADMIN_TOKEN.'));
    const check = checkToken(req, given, token, failures);
    if (check === 'locked') return tooManyFailures(req, res, failures);
    if (check === 'wrong') return void res.status(401).type('html').send(form('Wrong token.'));
    // Secure whenever the browser reached us over TLS (req.secure honours TRUST_PROXY and X-Forwarded-Proto).
    res.cookie(ADMIN_COOKIE, adminCookieValue(token), { httpOnly: true, sameSite: 'strict', path: '/', maxAge: ADMIN_SESSION_MS, secure: req.secure });
    res.redirect(303, DASHBOARD);
  });
  app.get('/admin', (_req, res) => res.redirect(DASHBOARD));
}

/** Sessions with waiting messages or an active run, with what is queued. */
async function activeSessions(deps: AdminDeps) {
  const active = await deps.queue.getActive();
  const sessions = new Set([...(await deps.redis.smembers(deps.keys.pending)), ...active.map((j) => j.data.session)]);
  return Promise.all(
    [...sessions].sort().map(async (session) => {
      const status = await deps.control.status(session);
      const queued = (await deps.redis.lrange(deps.keys.inbox(session), 0, 19)).map((raw) => {
        const m = JSON.parse(raw) as InboundMessage;
        return { id: m.id, receivedAt: new Date(m.receivedAt).toISOString(), preview: m.command ? `/${m.command}` : m.text.slice(0, 80) };
      });
      return { session, ...status, messages: queued, job: active.find((j) => j.data.session === session)?.id ?? null };
    }),
  );
}
