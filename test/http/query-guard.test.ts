import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';

const TOKEN = 'admin-token-for-tests-0123';
const auth = { authorization: `Bearer ${TOKEN}` };

describe('bull-board API behind the query guard', () => {
  let stack: Stack;
  let q: string;
  beforeAll(async () => {
    stack = await startStack('query-guard', { ADMIN_TOKEN: TOKEN });
    q = encodeURIComponent(stack.queue.name);
  });
  afterAll(async () => stack?.close());

  async function call(method: string, path: string, body?: string) {
    const res = await fetch(`${stack.baseUrl}/admin/queues/api${path}`, {
      method,
      headers: { ...auth, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body }),
    });
    return { status: res.status, body: await res.text() };
  }

  it('answers 400 (bull-board alone answered 500) for a NUL in a validated query value and a malformed escape in the queue name', async () => {
    for (const path of [
      '/queues?status=%00',
      `/queues?activeQueue=${q}&status=%00`,
      `/queues?activeQueue=${q}&page=%00`,
      '/queues?activeQueue=%E0%A4%A',
      '/job-schedulers?queueName=%E0%A4%A',
    ]) {
      const res = await call('GET', path);
      expect([path, res.status]).toEqual([path, 400]);
      expect(JSON.parse(res.body)).toMatchObject({ ok: false, error: expect.stringMatching(/control character|malformed %-escape/) });
    }
  });

  it('refuses repeated or nested parameters, control characters in a path segment and a NUL in a JSON body', async () => {
    expect((await call('GET', '/queues?status[]=a&status[]=b')).status).toBe(400);
    expect((await call('GET', '/queues?status=failed&status=completed')).status).toBe(400);
    expect((await call('GET', `/queues/${q}/%00`)).status).toBe(400);
    expect((await call('GET', `/queues/${q}/%01/logs`)).status).toBe(400);
    expect((await call('PUT', `/queues/${q}/clean/%00`)).status).toBe(400);
    // force must be a boolean: bull-board's refusal names the value it got, and a NUL there was a 500.
    const obliterate = await call('PUT', `/queues/${q}/obliterate`, JSON.stringify({ force: '\u0000' }));
    expect(obliterate.status).toBe(400);
    expect(obliterate.body).toContain('NUL');
    expect((await call('PUT', `/queues/${q}/add`, '{"name": 1')).status).toBe(400);
  });

  it('lets the dashboard’s own requests through unchanged', async () => {
    const list = await call('GET', `/queues?activeQueue=${q}&status=latest&page=1&jobsPerPage=10`);
    expect(list.status).toBe(200);
    expect(JSON.parse(list.body).queues[0].name).toBe(stack.queue.name);
    // bull-board's own validation still answers what it knows.
    expect((await call('GET', `/queues?activeQueue=${q}&status=nope`)).status).toBe(400);
    expect((await call('GET', `/queues/${q}/no-such-job`)).status).toBe(404);
    const paused = await call('PUT', `/queues/${q}/pause`);
    expect(paused.status).toBe(200);
    expect(await stack.queue.isPaused()).toBe(true);
    expect((await call('PUT', `/queues/${q}/resume`)).status).toBe(200);
    expect((await call('PUT', `/queues/${q}/concurrency`, JSON.stringify({ concurrency: 'x' }))).status).toBe(400);
  });

  it('still asks for the admin token first', async () => {
    const res = await fetch(`${stack.baseUrl}/admin/queues/api/queues?status=%00`);
    expect(res.status).toBe(401);
  });
});
