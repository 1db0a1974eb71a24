import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { basic, bearer, login, send, TOKEN } from './admin-http.js';

/**
 * A page the operator visits must not change anything through the operator's browser: browsers
 * send cached basic-auth credentials (and, without SameSite, cookies) with a cross-site form post
 * or fetch. State-changing admin requests are refused when the browser says they are cross-site,
 * and accept only the login cookie or a bearer token.
 */
describe('admin state changes refuse cross-site requests (CSRF)', () => {
  let stack: Stack;
  let cookie: string;
  let host: string;
  beforeAll(async () => {
    stack = await startStack('sec-csrf', { ADMIN_TOKEN: TOKEN });
    cookie = (await login(stack.baseUrl)).split(';')[0]!;
    host = new URL(stack.baseUrl).host;
  });
  afterAll(async () => stack?.close());

  // Each would otherwise answer something other than 403 (200, 202, 404 or 409).
  const changes: Array<[string, string]> = [
    ['POST', '/admin/api/queue/pause'],
    ['POST', '/admin/api/sessions/terminal%3Aops/cancel'],
    ['POST', '/admin/api/sessions/terminal%3Aops/reset'],
    ['POST', '/admin/api/pairing/telegram/ABCD1234/approve'],
    ['POST', '/admin/api/schedules/nope/pause'],
    ['DELETE', '/admin/api/schedules/nope'],
    ['PUT', '/admin/queues/api/queues/runs/pause'],
    ['PATCH', '/admin/queues/api/queues/runs/job-schedulers/nope'],
  ];

  it('refuses a cross-site request (Sec-Fetch-Site, a foreign or null Origin) with any credential: 403, one plain line, nothing changed', async () => {
    const attacks: Array<Record<string, string>> = [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'https://evil.example' },
      { origin: `http://${host}.evil.example` },
      { origin: 'null' },
    ];
    for (const credential of [bearer, { cookie }, basic]) {
      for (const attack of attacks) {
        for (const [method, path] of changes) {
          const res = await send(stack.baseUrl, method, path, { ...credential, ...attack });
          const what = `${method} ${path} ${JSON.stringify(attack)} ${Object.keys(credential)[0]}`;
          expect([what, res.status]).toEqual([what, 403]);
          expect(res.headers['content-type']).toMatch(/^text\/plain/);
          expect(res.text.trim().split('\n')).toHaveLength(1);
        }
      }
    }
    expect(await stack.queue.isPaused()).toBe(false);
    expect(await stack.queue.getJobCounts('waiting', 'active', 'completed')).toEqual({ waiting: 0, active: 0, completed: 0 });
  });

  it('refuses basic auth for a state change even from this site (403), and still accepts it for viewing', async () => {
    for (const [method, path] of changes) {
      const res = await send(stack.baseUrl, method, path, { ...basic, origin: stack.baseUrl, 'sec-fetch-site': 'same-origin' });
      expect([method, path, res.status]).toEqual([method, path, 403]);
      expect(res.text).toMatch(/basic auth/i);
    }
    expect(await stack.queue.isPaused()).toBe(false);
    expect((await send(stack.baseUrl, 'GET', '/admin/api/sessions', basic)).status).toBe(200);
    expect((await send(stack.baseUrl, 'GET', '/metrics', basic)).status).toBe(200);
    // A link from another site to the dashboard is a GET: it still opens.
    expect((await send(stack.baseUrl, 'GET', '/admin/queues', { ...basic, 'sec-fetch-site': 'cross-site' })).status).toBe(200);
  });

  it('a cross-site login form post is refused too', async () => {
    const body = new URLSearchParams({ token: TOKEN });
    const res = await fetch(`${stack.baseUrl}/admin/login`, {
      method: 'POST',
      body,
      headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      redirect: 'manual',
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('set-cookie')).toBeNull();
  });

  it('accepts bearer from curl (no Origin, no Sec-Fetch-Site) and the login cookie from the dashboard on this site', async () => {
    const pause = await send(stack.baseUrl, 'POST', '/admin/api/queue/pause', bearer);
    expect([pause.status, JSON.parse(pause.text)]).toEqual([200, { paused: true }]);
    const resume = await send(stack.baseUrl, 'POST', '/admin/api/queue/resume', { ...bearer, 'sec-fetch-site': 'none' });
    expect(resume.status).toBe(200);
    expect(await stack.queue.isPaused()).toBe(false);

    // What bull-board's own page sends when an operator clicks "pause" (same origin, the cookie).
    const fromDashboard = { cookie, origin: stack.baseUrl, 'sec-fetch-site': 'same-origin', referer: `${stack.baseUrl}/admin/queues` };
    const boardPause = await send(stack.baseUrl, 'PUT', '/admin/queues/api/queues/runs/pause', fromDashboard);
    expect(boardPause.status).toBeLessThan(300);
    expect(await stack.queue.isPaused()).toBe(true);
    const apiResume = await send(stack.baseUrl, 'POST', '/admin/api/queue/resume', fromDashboard);
    expect(apiResume.status).toBe(200);
    expect(await stack.queue.isPaused()).toBe(false);
    // A cookie session with basic credentials cached beside it is still the cookie session.
    expect((await send(stack.baseUrl, 'POST', '/admin/api/schedules/nope/pause', { ...fromDashboard, ...basic })).status).toBe(404);
  });

  it('the login cookie is SameSite=Strict, so browsers never send it with a cross-site request', async () => {
    expect(await login(stack.baseUrl, { origin: stack.baseUrl, 'sec-fetch-site': 'same-origin' })).toMatch(/;\s*SameSite=Strict/i);
  });
});
