import fc from 'fast-check';
import { adminBodies, nastyString, slackBodies, telegramBodies, type Body } from './fuzz-payloads.js';

/**
 * One planned request of the HTTP fuzz test. Credentials are applied when it is sent (a Slack
 * signature carries the time), so a plan names the kind of credential, not its bytes.
 */
export interface Plan {
  surface: 'slack' | 'telegram' | 'admin' | 'public';
  method: string;
  /** Path and query exactly as sent (may hold malformed escapes). */
  path: string;
  credential: string;
  body?: Body;
}

export const SLACK_CREDENTIALS = [
  'signed',
  'signed',
  'signed',
  'signed',
  'signed',
  'signed',
  'signed',
  'unsigned',
  'bad signature',
  'stale timestamp',
  'future timestamp',
  'garbage timestamp',
  'other secret',
] as const;
export const TELEGRAM_CREDENTIALS = ['secret', 'secret', 'secret', 'secret', 'secret', 'none', 'wrong', 'secret with a suffix'] as const;
export const ADMIN_CREDENTIALS = [
  'bearer',
  'bearer',
  'bearer',
  'bearer',
  'basic',
  'cookie',
  'cookie',
  'none',
  'wrong bearer',
  'malformed cookie',
  'garbage basic',
] as const;

/** A path segment: plain, %-encoded nasty text, or raw malformed escapes. */
const segment = fc.oneof(
  fc.constantFrom('1', 'runs', 'telegram:1', 'slack:C0FUZZ', 'nope', '..', '%2e%2e', '%00', '%E0%A4%A', '%', '%ZZ', '%ED%A0%80', 'a%2Fb'),
  nastyString.map((s) => encodeURIComponent(s.toWellFormed())),
  fc.string({ unit: 'grapheme-ascii', maxLength: 20 }).map((s) => s.replace(/[/?#\s]/g, '_')),
);

/** A query string: sensible names with nasty values, nasty names, repeats, raw malformed escapes. */
const query = fc
  .array(
    fc.tuple(
      fc.constantFrom('status', 'activeQueue', 'page', 'jobsPerPage', 'format', 'queueName', 'from', 'to', 'metric', 'x', 'status[]', '%00', '%E0'),
      fc.oneof(segment, fc.constantFrom('%00', '%E0%A4%A', '%01', 'a%00b'), fc.constantFrom('latest', 'failed', 'json', '-1', '1e309', 'runs')),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}` : ''));

/** bull-board's own query parameters (it validates them, and had a 500 for a NUL or a bad escape in one). */
const boardQuery = fc
  .array(
    fc.tuple(
      fc.constantFrom('status', 'activeQueue', 'page', 'jobsPerPage', 'queueName'),
      fc.oneof(fc.constantFrom('%00', '%E0%A4%A', 'x%00', 'latest', 'failed', 'runs', '2'), segment),
    ),
    { minLength: 1, maxLength: 4 },
  )
  .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`);

const slack: fc.Arbitrary<Plan> = fc
  .record({ credential: fc.constantFrom(...SLACK_CREDENTIALS), body: slackBodies, q: fc.option(query, { freq: 5, nil: '' }) })
  .map(({ credential, body, q }) => ({ surface: 'slack', method: 'POST', path: `/slack/events${q}`, credential, body }));

const telegram: fc.Arbitrary<Plan> = fc
  .record({ credential: fc.constantFrom(...TELEGRAM_CREDENTIALS), body: telegramBodies })
  .map(({ credential, body }) => ({ surface: 'telegram', method: 'POST', path: '/telegram/webhook', credential, body }));

const BOARD_ACTIONS = [
  'retry/failed',
  'retry/%00',
  'clean/completed',
  'clean/nope',
  'promote',
  'pause',
  'resume',
  'empty',
  'obliterate',
  'concurrency',
  'rate-limit',
  'rate-limit/release',
];

/** Admin routes: the API, the login, bull-board's API and pages, the run and job views. `add` only without a valid token (it queues by design). */
const adminRoute = fc.oneof(
  fc.constant({ method: 'GET', path: '/admin/api/sessions', body: false }),
  segment.map((s) => ({ method: 'POST', path: `/admin/api/sessions/${s}/cancel`, body: true })),
  // Never a real session's key: an accepted reset is queued (and answered) by design.
  segment
    .filter((s) => !/^(telegram|slack|discord|terminal)(:|%3A)/i.test(s))
    .map((s) => ({ method: 'POST', path: `/admin/api/sessions/${s}/reset`, body: true })),
  fc.constantFrom({ method: 'POST', path: '/admin/api/queue/pause', body: true }, { method: 'POST', path: '/admin/api/queue/resume', body: true }),
  segment.map((s) => ({ method: 'GET', path: `/admin/api/${s}`, body: false })),
  // The pairing API (DM_POLICY=pairing): lists, approvals, denials and revocations by platform and code.
  fc
    .tuple(fc.constantFrom('telegram', 'slack', 'discord', 'nope'), segment, segment)
    .chain(([platform, code, user]) =>
      fc.constantFrom(
        { method: 'GET', path: '/admin/api/pairing', body: false },
        { method: 'GET', path: `/admin/api/pairing/${code}`, body: false },
        { method: 'POST', path: `/admin/api/pairing/${platform}/${code}/approve`, body: true },
        { method: 'POST', path: `/admin/api/pairing/${platform}/${code}/deny`, body: true },
        { method: 'POST', path: `/admin/api/pairing/${platform}/users/${user}/revoke`, body: true },
      ),
    ),
  fc.constantFrom(
    { method: 'GET', path: '/admin/login', body: false },
    { method: 'POST', path: '/admin/login', body: true },
    { method: 'GET', path: '/admin', body: false },
  ),
  fc
    .tuple(fc.constantFrom('/admin/queues/api/queues', '/admin/queues/api/queues', '/admin/queues/api/job-schedulers'), boardQuery)
    .map(([p, q]) => ({ method: 'GET', path: `${p}${q}`, body: false })),
  fc
    .tuple(segment, segment, fc.constantFrom('', '/logs', '/flow'))
    .map(([a, b, tail]) => ({ method: 'GET', path: `/admin/queues/api/queues/${a}/${b}${tail}`, body: false })),
  fc
    .tuple(fc.constantFrom('runs', 'runs', 'nope'), fc.constantFrom(...BOARD_ACTIONS))
    .map(([q, a]) => ({ method: 'PUT', path: `/admin/queues/api/queues/${q}/${a}`, body: true })),
  fc
    .tuple(segment, fc.constantFrom('retry', 'clean', 'promote', 'update-data', 'delay', 'priority'))
    .map(([id, a]) => ({ method: 'PUT', path: `/admin/queues/api/queues/runs/${id}/${a}`, body: true })),
  fc
    .constantFrom(
      '/admin/queues/api/redis/stats',
      '/admin/queues/api/job-schedulers',
      '/admin/queues/api/queues/runs/metrics',
      '/admin/queues/api/queues/runs/workers',
      '/admin/queues',
      '/admin/queues/queue/runs',
    )
    .chain((p) => query.map((q) => ({ method: 'GET', path: `${p}${q}`, body: false }))),
  fc
    .tuple(fc.constantFrom('runs', 'jobs'), segment, fc.constantFrom('', '?format=json', '?format=%00'))
    .map(([kind, id, q]) => ({ method: 'GET', path: `/admin/${kind}/${id}${q}`, body: false })),
);

const admin: fc.Arbitrary<Plan> = fc
  .record({ route: adminRoute, credential: fc.constantFrom(...ADMIN_CREDENTIALS), body: adminBodies, dice: fc.integer({ min: 0, max: 9 }) })
  .map(({ route, credential, body, dice }) => {
    const addJob = dice === 0 && !['bearer', 'basic', 'cookie'].includes(credential);
    const path = addJob ? '/admin/queues/api/queues/runs/add' : route.path;
    // A body now and then where none is expected.
    return { surface: 'admin', method: addJob ? 'POST' : route.method, path, credential, ...((route.body || dice === 1) && { body }) };
  });

const publicRoute: fc.Arbitrary<Plan> = fc
  .record({
    path: fc.constantFrom('/metrics', '/healthz', '/readyz', '/', '/nope', '/slack/events'),
    method: fc.constantFrom('GET', 'GET', 'POST', 'HEAD', 'DELETE', 'OPTIONS'),
    q: query,
    credential: fc.constantFrom(...ADMIN_CREDENTIALS),
  })
  .map(({ path, method, q, credential }) => ({ surface: 'public', method, path: `${path}${q}`, credential }));

export const plans = fc.oneof(
  { weight: 4, arbitrary: slack },
  { weight: 3, arbitrary: telegram },
  { weight: 4, arbitrary: admin },
  { weight: 1, arbitrary: publicRoute },
);
