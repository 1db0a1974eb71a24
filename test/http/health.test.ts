import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureRedis, type RedisHandle } from '../../src/cli/redis-bootstrap.js';
import { createLogger } from '../../src/log.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitFor } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';

const ADMIN_TOKEN = 'health-admin-token-0123';

describe('health and readiness when Redis goes away', () => {
  let redis: RedisHandle;
  let stack: Stack;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    // A private Redis of this test's own, so stopping it disturbs nobody.
    redis = await ensureRedis(`redis://127.0.0.1:${port}`, false, true, createLogger('silent'));
    stack = await startStack('health', { REDIS_URL: redis.url, ADMIN_TOKEN });
  });
  afterAll(async () => {
    // Bring a Redis back on the same port so the roles can close cleanly, then stop it by its pid.
    const again = spawn('redis-server', ['--port', new URL(redis.url).port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await waitFor('redis back', async () => (await fetch(`${stack.baseUrl}/readyz`)).status === 200, 20_000, 200);
    await stack.close();
    again.kill('SIGTERM');
    await redis.stop();
  });

  it('/healthz stays 200 while /readyz turns 503 with the reason', async () => {
    const ready = await fetch(`${stack.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    await redis.stop();
    const notReady = await waitFor(
      'readyz to fail',
      async () => {
        // The reasons are for operators (an anonymous caller gets the bare status: test/security/readyz.test.ts).
        const res = await fetch(`${stack.baseUrl}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        return res.status === 503 && ((await res.json()) as { problems: string[]; redis: string });
      },
      15_000,
      200,
    );
    expect(notReady.problems[0]).toMatch(/^redis: /);
    expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);
  }, 30_000);
});
