import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitFor } from '../helpers/processes.js';
import { terminalMessage } from '../../src/channels/terminal/inbound.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { terminalStreamKey } from '../../src/channels/terminal/stream.js';
import { FAILED_LOGINS_PER_MINUTE } from '../../src/http/auth.js';

const TOKEN = 'admin-token-for-tests-0123';
const bearer = { authorization: `Bearer ${TOKEN}` };

async function get(stack: Stack, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack.baseUrl}${path}`, { headers, redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

function metricValue(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('admin surface without ADMIN_TOKEN', () => {
  let stack: Stack;
  beforeAll(async () => (stack = await startStack('noadmin', { ADMIN_TOKEN: '' })));
  afterAll(async () => stack?.close());

  it('refuses the dashboard, the API, the run view and the metrics', async () => {
    for (const path of ['/admin/queues', '/admin/api/sessions', '/admin/runs/1.1', '/metrics']) {
      const res = await get(stack, path, bearer);
      expect([path, res.status]).toEqual([path, 403]);
      expect(res.text).toContain('set ADMIN_TOKEN');
    }
  });
});

describe('admin surface with ADMIN_TOKEN', () => {
  let stack: Stack;
  beforeAll(async () => (stack = await startStack('admin', { ADMIN_TOKEN: TOKEN })));
  afterAll(async () => stack?.close());

  it('asks for credentials, refuses a wrong token, accepts bearer, basic auth and the login cookie', async () => {
    const none = await get(stack, '/admin/queues');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm="Switchboard admin"/);
    expect((await get(stack, '/admin/api/sessions', { authorization: 'Bearer wrong-token-xxxxxxxx' })).status).toBe(401);
    expect((await get(stack, '/admin/queues', bearer)).status).toBe(200);
    const basic = `Basic ${Buffer.from(`ops:${TOKEN}`).toString('base64')}`;
    const board = await get(stack, '/admin/queues', { authorization: basic });
    expect(board.status).toBe(200);
    expect(board.text).toContain('<title>Switchboard</title>');

    const badLogin = await fetch(`${stack.baseUrl}/admin/login`, { method: 'POST', body: new URLSearchParams({ token: 'nope' }), redirect: 'manual' });
    expect(badLogin.status).toBe(401);
    const login = await fetch(`${stack.baseUrl}/admin/login`, { method: 'POST', body: new URLSearchParams({ token: TOKEN }), redirect: 'manual' });
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/admin/queues');
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).not.toContain(TOKEN);
    expect((await get(stack, '/admin/api/sessions', { cookie })).status).toBe(200);
    expect((await get(stack, '/admin/api/sessions', { cookie: 'sb_admin=forged' })).status).toBe(401);
  });

  it('counts a scripted run in /metrics by the right amounts, and shows it in the run view', async () => {
    const before = (await get(stack, '/metrics', bearer)).text;
    await import('node:fs/promises').then(async (fs) => {
      const dir = `${stack.workspaceRoot}/terminal%3Ametrics`;
      await fs.mkdir(dir, { recursive: true });
      await fs.writeFile(`${dir}/a.txt`, 'alpha');
    });
    stack.fake.script([
      {
        content: 'Let me read it.',
        toolCalls: [{ id: 'call_1', name: 'read_file', arguments: '{"path":"a.txt"}' }],
        usage: { prompt_tokens: 100, completion_tokens: 10 },
      },
      { content: 'It says alpha.', usage: { prompt_tokens: 150, completion_tokens: 5 } },
    ]);
    const message = terminalMessage('metrics', 'what does a.txt say?', 'tester');
    await stack.gateway.intake.accept(message);
    expect((await stack.gateway.intake.accept(message)).kind).toBe('duplicate');
    const [job] = await waitFor('the run to complete', async () => {
      const done = await stack.queue.getJobs(['completed']);
      return done.length === 1 && done;
    });
    const after = (await get(stack, '/metrics', bearer)).text;
    const delta = (name: string, labels = '') => metricValue(after, name, labels) - metricValue(before, name, labels);
    expect(delta('switchboard_inbound_events_total', 'platform="terminal"')).toBe(1);
    expect(delta('switchboard_deduplicated_events_total', 'platform="terminal"')).toBe(1);
    expect(delta('switchboard_runs_total', 'state="completed",reason="none",agent="default"')).toBe(1);
    expect(delta('switchboard_model_calls_total')).toBe(2);
    expect(delta('switchboard_model_tokens_total', 'kind="prompt"')).toBe(250);
    expect(delta('switchboard_model_tokens_total', 'kind="completion"')).toBe(15);
    expect(delta('switchboard_tool_calls_total', 'tool="read_file",outcome="ok"')).toBe(1);
    expect(delta('switchboard_deliveries_total', 'platform="terminal",kind="answer"')).toBe(1);
    expect(delta('switchboard_run_duration_seconds_count', 'state="completed"')).toBe(1);
    expect(delta('switchboard_queue_wait_seconds_count')).toBe(1);
    expect(metricValue(after, 'switchboard_queue_jobs', 'state="completed"')).toBe(1);

    const runId = job!.data.runId!;
    expect((await get(stack, `/admin/jobs/${job!.id}`, bearer)).headers.get('location')).toBe(`/admin/runs/${runId}`);
    const json = JSON.parse((await get(stack, `/admin/runs/${runId}?format=json`, bearer)).text);
    expect(json.transcript.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(json.transcript[2]).toMatchObject({ tool_call_id: 'call_1', content: 'alpha' });
    expect(json.timeline.map((t: { type: string }) => t.type)).toEqual(['model_call', 'narration', 'tool_start', 'tool_end', 'model_call']);
    expect(json.delivered).toHaveLength(1);
    const html = (await get(stack, `/admin/runs/${runId}`, bearer)).text;
    expect(html).toContain('It says alpha.');
    expect(html).toContain('class="state completed"');
  });

  it('cancels a run through the admin API: the agent stops and the user is told', async () => {
    stack.fake.setHandler(() => ({ content: 'too late', delayMs: 20_000 }));
    const message = terminalMessage('cancel-me', 'take your time', 'tester');
    const session = sessionKeyOf(message);
    await stack.gateway.intake.accept(message);
    await waitFor('the run to call the model', () => stack.fake.requests.some((r) => JSON.stringify(r.body).includes('take your time')));
    const sessions = JSON.parse((await get(stack, '/admin/api/sessions', bearer)).text).sessions;
    expect(sessions).toEqual([expect.objectContaining({ session, running: true, queued: 1 })]);
    const cancel = await fetch(`${stack.baseUrl}/admin/api/sessions/${encodeURIComponent(session)}/cancel`, { method: 'POST', headers: bearer });
    expect(cancel.status).toBe(202);
    const told = await waitFor('the user to be told', async () => {
      const events = await stack.redis.xrange(terminalStreamKey(stack.config.queue.prefix, 'cancel-me'), '-', '+');
      const posts = events.map(([, f]) => JSON.parse(f[1]!)).filter((e) => e.type === 'post');
      return posts.length > 0 && posts;
    });
    expect(told).toEqual([expect.objectContaining({ kind: 'notice', text: 'Stopped.' })]);
    const again = await fetch(`${stack.baseUrl}/admin/api/sessions/${encodeURIComponent(session)}/cancel`, { method: 'POST', headers: bearer });
    expect(again.status).toBe(409);
  });

  it('pauses and resumes the queue', async () => {
    const pause = await fetch(`${stack.baseUrl}/admin/api/queue/pause`, { method: 'POST', headers: bearer });
    expect(await pause.json()).toEqual({ paused: true });
    expect(await stack.queue.isPaused()).toBe(true);
    await fetch(`${stack.baseUrl}/admin/api/queue/resume`, { method: 'POST', headers: bearer });
    expect(await stack.queue.isPaused()).toBe(false);
  });
});

describe('admin rate limit', () => {
  let stack: Stack;
  beforeAll(async () => (stack = await startStack('ratelimit', { ADMIN_TOKEN: TOKEN })));
  afterAll(async () => stack?.close());

  it('rate-limits failed attempts, counting only refused credentials', async () => {
    expect((await get(stack, '/admin/runs/no-such-run', bearer)).status).toBe(404);
    const statuses: number[] = [];
    for (let i = 0; i <= FAILED_LOGINS_PER_MINUTE; i++)
      statuses.push((await get(stack, '/admin/api/sessions', { authorization: 'Bearer wrong-again-xxxxxx' })).status);
    expect(statuses).toEqual([...Array<number>(FAILED_LOGINS_PER_MINUTE).fill(401), 429]);
  });
});

describe('read-only admin', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('refuses changes through the API', async () => {
    stack = await startStack('readonly', { ADMIN_TOKEN: TOKEN, ADMIN_READONLY: '1' });
    const res = await fetch(`${stack.baseUrl}/admin/api/queue/pause`, { method: 'POST', headers: bearer });
    expect(res.status).toBe(403);
    expect(await stack.queue.isPaused()).toBe(false);
    expect((await get(stack, '/admin/api/sessions', bearer)).status).toBe(200);
  });
});

describe('bad input on the admin surface', () => {
  let stack: Stack;
  beforeAll(async () => (stack = await startStack('admin-bad', { ADMIN_TOKEN: TOKEN })));
  afterAll(async () => stack?.close());

  it('a cookie with a malformed escape is no credential (401), not a server error', async () => {
    const res = await get(stack, '/admin/api/sessions', { cookie: 'sb_admin=%E0%A4%A' });
    expect(res.status).toBe(401);
  });

  it('a body that is not JSON is a short JSON 400, without a stack or install paths', async () => {
    const res = await fetch(`${stack.baseUrl}/admin/api/queue/pause`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '{"not json',
    });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ ok: false });
    expect(text).not.toMatch(/node_modules|at .*\.js:\d+/);
  });

  it('a reset for a platform no worker can answer is refused, and nothing is queued', async () => {
    for (const session of ['toString:x', '__proto__:constructor', 'nosuch:123']) {
      const res = await fetch(`${stack.baseUrl}/admin/api/sessions/${encodeURIComponent(session)}/reset`, { method: 'POST', headers: bearer });
      expect([session, res.status]).toEqual([session, 400]);
    }
    expect(await stack.queue.getJobCounts('waiting', 'active', 'delayed')).toEqual({ waiting: 0, active: 0, delayed: 0 });
    const ok = await fetch(`${stack.baseUrl}/admin/api/sessions/${encodeURIComponent('terminal:ops')}/reset`, { method: 'POST', headers: bearer });
    expect(ok.status).toBe(202);
    // The reset is a turn of its own: let it finish before the stack closes.
    await waitFor('the reset turn', async () => (await stack.queue.getJobCounts('completed')).completed === 1);
  });
});
