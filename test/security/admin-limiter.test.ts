import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseEnv } from '../../src/config/load.js';
import { deriveConfig } from '../../src/config/config.js';
import { FAILED_LOGINS_PER_MINUTE } from '../../src/http/auth.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { basic, bearer, send, TOKEN, wrongBearer } from './admin-http.js';

/**
 * The admin limiter slows down guessing the token: it counts refused tokens per client address.
 * Good credentials are never counted, so operators' dashboards and Prometheus are never locked
 * out by their own traffic; the address is the socket's unless TRUST_PROXY says whom to believe.
 */
const statuses = async (n: number, request: () => Promise<{ status: number }>) => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request()).status);
  return out;
};
const counts = (list: number[]) => list.reduce<Record<number, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});

describe('the admin limiter counts failures only, per client address', () => {
  let stack: Stack;
  beforeAll(async () => (stack = await startStack('sec-limiter', { ADMIN_TOKEN: TOKEN })));
  afterAll(async () => stack?.close());

  it('good credentials are never counted: 30 at once (a dashboard, Prometheus), then more, all 200', async () => {
    // fetch's pool of keep-alive connections from 127.0.0.1, as a browser loads the dashboard: all in flight at once.
    for (const path of ['/metrics', '/admin/queues/api/queues']) {
      const burst = await Promise.all(
        Array.from({ length: 30 }, (_, i) => fetch(`${stack.baseUrl}${path}`, { headers: i % 2 ? bearer : basic }).then((r) => r.status)),
      );
      expect([path, counts(burst)]).toEqual([path, { 200: 30 }]);
    }
    const from = '127.0.0.1';
    expect(await statuses(30, () => send(stack.baseUrl, 'GET', '/admin/api/sessions', bearer, from))).toEqual(Array<number>(30).fill(200));
    expect((await send(stack.baseUrl, 'GET', '/admin/api/sessions', bearer, from)).status).toBe(200);
    // The failures still start from zero.
    expect(await statuses(FAILED_LOGINS_PER_MINUTE + 1, () => send(stack.baseUrl, 'GET', '/admin/api/sessions', wrongBearer, from))).toEqual([
      ...Array<number>(FAILED_LOGINS_PER_MINUTE).fill(401),
      429,
    ]);
  });

  it('an address that failed 10 times gets 429 and its tokens are not checked for the rest of the minute; other addresses are not affected', async () => {
    const guesser = '127.0.31.2';
    const operator = '127.0.31.3';
    const tries = await statuses(FAILED_LOGINS_PER_MINUTE + 1, () => send(stack.baseUrl, 'GET', '/admin/api/sessions', wrongBearer, guesser));
    expect(tries).toEqual([...Array<number>(FAILED_LOGINS_PER_MINUTE).fill(401), 429]);
    // A right guess while locked is not let through: otherwise the lock would not slow guessing at all.
    expect((await send(stack.baseUrl, 'GET', '/admin/api/sessions', bearer, guesser)).status).toBe(429);
    const login = await send(stack.baseUrl, 'POST', '/admin/login', { 'content-type': 'application/x-www-form-urlencoded' }, guesser);
    expect(login.status).toBe(429);
    expect((await send(stack.baseUrl, 'GET', '/admin/api/sessions', bearer, operator)).status).toBe(200);
    expect((await send(stack.baseUrl, 'GET', '/metrics', wrongBearer, operator)).status).toBe(401);
  });

  it('a request without a credential is asked for one (401) but not counted: a dashboard polling after its login expired locks nobody out', async () => {
    const from = '127.0.31.4';
    expect(await statuses(25, () => send(stack.baseUrl, 'GET', '/admin/queues/api/queues', {}, from))).toEqual(Array<number>(25).fill(401));
    expect((await send(stack.baseUrl, 'GET', '/admin/api/sessions', bearer, from)).status).toBe(200);
  });

  it('without TRUST_PROXY, X-Forwarded-For does not change the counted address', async () => {
    const from = '127.0.31.5';
    const spoofed = await statuses(FAILED_LOGINS_PER_MINUTE + 1, async () =>
      send(stack.baseUrl, 'GET', '/admin/api/sessions', { ...wrongBearer, 'x-forwarded-for': `198.51.100.${Math.floor(Math.random() * 250) + 1}` }, from),
    );
    expect(spoofed).toEqual([...Array<number>(FAILED_LOGINS_PER_MINUTE).fill(401), 429]);
  });
});

describe('behind a proxy (TRUST_PROXY=loopback)', () => {
  let stack: Stack;
  beforeAll(async () => (stack = await startStack('sec-limiter-proxy', { ADMIN_TOKEN: TOKEN, TRUST_PROXY: 'loopback' })));
  afterAll(async () => stack?.close());

  it('counts the client the proxy names, not the proxy: one client locked, another through the same proxy not', async () => {
    const via = (client: string) => ({ 'x-forwarded-for': client });
    const tries = await statuses(FAILED_LOGINS_PER_MINUTE + 1, () =>
      send(stack.baseUrl, 'GET', '/admin/api/sessions', { ...wrongBearer, ...via('203.0.113.7') }),
    );
    expect(tries).toEqual([...Array<number>(FAILED_LOGINS_PER_MINUTE).fill(401), 429]);
    expect((await send(stack.baseUrl, 'GET', '/admin/api/sessions', { ...wrongBearer, ...via('203.0.113.8') })).status).toBe(401);
    expect((await send(stack.baseUrl, 'GET', '/admin/api/sessions', { ...bearer, ...via('203.0.113.8') })).status).toBe(200);
  });
});

describe('TRUST_PROXY', () => {
  const trustProxy = (value?: string) => deriveConfig(parseEnv(value === undefined ? {} : { TRUST_PROXY: value })).http.trustProxy;

  it('is off by default and with 0; a number of hops; or a list of addresses and subnets', () => {
    expect(trustProxy()).toBe(false);
    expect(trustProxy('0')).toBe(false);
    expect(trustProxy('2')).toBe(2);
    expect(trustProxy('loopback, 10.0.0.0/8,fd00::/8,192.168.1.10')).toEqual(['loopback', '10.0.0.0/8', 'fd00::/8', '192.168.1.10']);
  });

  it('refuses anything else with one line naming the variable', () => {
    for (const bad of ['true', 'yes', '-1', 'proxy.example.com', '10.0.0.0/33', '10.0.0.300', 'loopback,,nope']) {
      let error: unknown;
      try {
        trustProxy(bad);
      } catch (err) {
        error = err;
      }
      expect([bad, error]).toEqual([bad, expect.any(ConfigError)]);
      expect((error as Error).message).toMatch(/^config: TRUST_PROXY must be 0 .*number of proxy hops.*loopback/m);
    }
  });
});
