import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCookieValue } from '../../src/http/auth.js';
import { writeMcpConfig } from '../fakes/mcp-harness.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { basic, bearer, send, TOKEN, wrongBearer } from './admin-http.js';

/**
 * /readyz is open for load balancers, which need the status only. What is wrong (MCP server
 * names, channel errors, Redis messages, worker counts) is for operators: only with an admin
 * credential.
 */
describe('/readyz without a login', () => {
  let failing: Stack;
  let fine: Stack;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-sec-ready-'));
    const config = await writeMcpConfig(dir, { 'secret-tracker': { command: join(dir, 'no-such-server') } });
    failing = await startStack('sec-ready-failing', { ADMIN_TOKEN: TOKEN, MCP_CONFIG: config });
    fine = await startStack('sec-ready-fine', { ADMIN_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await failing?.close();
    await fine?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers a bare status to anonymous callers (and to a wrong token): {"ready":false} 503, {"ready":true} 200', async () => {
    for (const headers of [{}, wrongBearer, { cookie: 'sb_admin=forged' }] as Array<Record<string, string>>) {
      const down = await send(failing.baseUrl, 'GET', '/readyz', headers);
      expect([down.status, JSON.parse(down.text)]).toEqual([503, { ready: false }]);
      expect(down.text).not.toMatch(/secret-tracker|mcp|worker|redis|problems/i);
      const up = await send(fine.baseUrl, 'GET', '/readyz', headers);
      expect([up.status, JSON.parse(up.text)]).toEqual([200, { ready: true }]);
    }
  });

  it('shows the details with any admin credential (bearer, basic auth, the login cookie)', async () => {
    for (const headers of [bearer, basic, { cookie: `sb_admin=${adminCookieValue(TOKEN)}` }]) {
      const down = await send(failing.baseUrl, 'GET', '/readyz', headers);
      expect(down.status).toBe(503);
      const body = JSON.parse(down.text) as { ready: boolean; problems: string[]; workers: number };
      expect(body).toMatchObject({ ready: false, workers: 1 });
      expect(body.problems).toEqual([expect.stringMatching(/^mcp server secret-tracker: not connected/)]);
      const up = await send(fine.baseUrl, 'GET', '/readyz', headers);
      expect([up.status, JSON.parse(up.text)]).toEqual([200, expect.objectContaining({ ready: true, problems: [], redis: 'ok', workers: 1 })]);
    }
  });
});
