import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { MemoryStore } from '../../src/memory/store.js';

const TOKEN = 'admin-token-for-tests-0123';
const bearer = { authorization: `Bearer ${TOKEN}` };
const ALICE = 'telegram:42';
const ALICE_SLACK = 'slack:UALICE';
const BOB = 'slack:UBOB';
const enc = encodeURIComponent;

async function call(stack: Stack, method: string, path: string, options: { headers?: Record<string, string>; body?: unknown } = {}) {
  const headers = { ...bearer, ...(options.body !== undefined && { 'content-type': 'application/json' }), ...options.headers };
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers,
    redirect: 'manual',
    ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
  });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').includes('application/json');
  return { status: res.status, headers: res.headers, text, body: json ? JSON.parse(text) : undefined };
}

/** Alice in two agents, Bob in one, written as the worker writes them (the stack's own keys). */
async function seed(stack: Stack): Promise<void> {
  const store = new MemoryStore(stack.redis, stack.keys, { maxEntries: 50 });
  await store.remember({ agent: 'default', owner: ALICE }, 'Alice prefers <b>tea</b>', 'said');
  await store.remember({ agent: 'ops', owner: ALICE }, 'Alice is on call on Mondays', 'said');
  await store.remember({ agent: 'default', owner: BOB }, 'Bob prefers coffee', 'said');
}

const agentsOf = (body: { agents: { agent: string; entries: { text: string }[] }[] }) =>
  Object.fromEntries(body.agents.map((a) => [a.agent, a.entries.map((e) => e.text)]));

describe('admin API for memory and identities', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack('memory-api', { ADMIN_TOKEN: TOKEN });
    await seed(stack);
  });
  afterAll(async () => stack?.close());

  it('refuses every route without the admin token, and a change with basic auth', async () => {
    for (const [method, path] of [
      ['GET', `/admin/api/memory/${enc(ALICE)}`],
      ['GET', `/admin/api/memory/${enc(ALICE)}/export`],
      ['DELETE', `/admin/api/memory/${enc(ALICE)}`],
      ['POST', '/admin/api/identities/link'],
      ['DELETE', `/admin/api/identities/${enc(ALICE_SLACK)}`],
      ['GET', `/admin/memory?person=${enc(ALICE)}`],
      ['POST', '/admin/memory/delete'],
    ] as const) {
      const res = await fetch(`${stack.baseUrl}${path}`, { method });
      expect([method, path, res.status]).toEqual([method, path, 401]);
    }
    const basic = { authorization: `Basic ${Buffer.from(`ops:${TOKEN}`).toString('base64')}` };
    expect((await call(stack, 'DELETE', `/admin/api/memory/${enc(ALICE)}`, { headers: basic })).status).toBe(403);
    expect((await call(stack, 'GET', `/admin/api/memory/${enc(ALICE)}`, { headers: basic })).status).toBe(200);
    expect(agentsOf((await call(stack, 'GET', `/admin/api/memory/${enc(ALICE)}`)).body)).toEqual({
      default: ['Alice prefers <b>tea</b>'],
      ops: ['Alice is on call on Mondays'],
    });
  });

  it("lists and exports one person's memory (an attachment of plain JSON)", async () => {
    const list = await call(stack, 'GET', `/admin/api/memory/${enc(ALICE)}`);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ person: ALICE, agents: [{ agent: 'default' }, { agent: 'ops' }] });
    expect(list.text).not.toContain('Bob');

    const exported = await call(stack, 'GET', `/admin/api/memory/${enc(ALICE)}/export`);
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-disposition')).toBe('attachment; filename=memory-telegram_42.json');
    expect(exported.body).toMatchObject({ person: ALICE, exportedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(agentsOf(exported.body)).toEqual({ default: ['Alice prefers <b>tea</b>'], ops: ['Alice is on call on Mondays'] });
    expect(exported.body.agents[0].entries[0]).toMatchObject({ state: 'kept', provenance: 'said', createdAt: expect.stringMatching(/Z$/) });

    const bad = await call(stack, 'GET', '/admin/api/memory/nonsense');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/neither a person/);
  });

  it('links an identity to a person, answers by it, and unlinks it', async () => {
    const linked = await call(stack, 'POST', '/admin/api/identities/link', { body: { a: ALICE, b: ALICE_SLACK } });
    expect(linked).toMatchObject({ status: 200, body: { person: ALICE, identity: ALICE_SLACK, unused: 0 } });
    expect((await call(stack, 'GET', `/admin/api/identities/${enc(ALICE_SLACK)}`)).body).toEqual({ identity: ALICE_SLACK, person: ALICE, linked: true });
    const byLink = await call(stack, 'GET', `/admin/api/memory/${enc(ALICE_SLACK)}`);
    expect(byLink.body).toMatchObject({ person: ALICE, resolvedFrom: ALICE_SLACK });
    expect(agentsOf(byLink.body).ops).toEqual(['Alice is on call on Mondays']);

    expect((await call(stack, 'POST', '/admin/api/identities/link', { body: { a: ALICE, b: 'nonsense' } })).status).toBe(400);
    expect((await call(stack, 'POST', '/admin/api/identities/link', { body: { a: ALICE } })).status).toBe(400);
    expect((await call(stack, 'DELETE', `/admin/api/identities/${enc(ALICE_SLACK)}`)).body).toEqual({ identity: ALICE_SLACK, unlinked: true });
    expect((await call(stack, 'DELETE', `/admin/api/identities/${enc(ALICE_SLACK)}`)).status).toBe(404);
    expect((await call(stack, 'GET', `/admin/api/memory/${enc(ALICE_SLACK)}`)).body).toEqual({ person: ALICE_SLACK, agents: [] });
  });

  it('shows the memory page, escaped, with an Export link and Delete forms; the form deletes', async () => {
    const page = await call(stack, 'GET', `/admin/memory?person=${enc(ALICE)}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Alice prefers &lt;b&gt;tea&lt;/b&gt;');
    expect(page.text).not.toContain('<b>tea');
    expect(page.text).toContain(`href="/admin/api/memory/${enc(ALICE)}/export"`);
    expect(page.text).toContain('action="/admin/memory/delete"');
    expect(page.text).not.toContain('Bob');
    expect((await call(stack, 'GET', '/admin/memory?person=nonsense')).status).toBe(400);

    const form = await fetch(`${stack.baseUrl}/admin/memory/delete`, {
      method: 'POST',
      headers: bearer,
      body: new URLSearchParams({ person: ALICE, agent: 'ops' }),
      redirect: 'manual',
    });
    expect(form.status).toBe(303);
    expect(form.headers.get('location')).toBe(`/admin/memory?${new URLSearchParams({ person: ALICE, deleted: 'deleted 1 entry' })}`);
    expect(agentsOf((await call(stack, 'GET', `/admin/api/memory/${enc(ALICE)}`)).body)).toEqual({ default: ['Alice prefers <b>tea</b>'] });
    const crossSite = await fetch(`${stack.baseUrl}/admin/memory/delete`, {
      method: 'POST',
      headers: { ...bearer, origin: 'https://evil.example' },
      body: new URLSearchParams({ person: ALICE }),
    });
    expect(crossSite.status).toBe(403);
  });

  it("deletes a person's memory in one agent or all, leaving the other person's; nothing left is a 404", async () => {
    await seed(stack);
    const one = await call(stack, 'DELETE', `/admin/api/memory/${enc(ALICE)}?agent=ops`);
    expect(one).toMatchObject({ status: 200, body: { person: ALICE, deleted: 1, agents: [{ agent: 'ops', deleted: 1 }] } });
    const all = await call(stack, 'DELETE', `/admin/api/memory/${enc(ALICE)}`);
    expect(all).toMatchObject({ status: 200, body: { deleted: 1, agents: [{ agent: 'default', deleted: 1 }] } });
    const again = await call(stack, 'DELETE', `/admin/api/memory/${enc(ALICE)}`);
    expect(again).toMatchObject({ status: 404, body: { deleted: 0, error: `no memory of ${ALICE}` } });
    expect((await call(stack, 'GET', `/admin/api/memory/${enc(ALICE)}`)).body.agents).toEqual([]);
    expect(agentsOf((await call(stack, 'GET', `/admin/api/memory/${enc(BOB)}`)).body)).toEqual({ default: ['Bob prefers coffee'] });
  });
});

describe('read-only admin and memory', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack('memory-ro', { ADMIN_TOKEN: TOKEN, ADMIN_READONLY: '1' });
    await seed(stack);
  });
  afterAll(async () => stack?.close());

  it('lists and exports, but deletes and links nothing', async () => {
    expect((await call(stack, 'DELETE', `/admin/api/memory/${enc(ALICE)}`)).status).toBe(403);
    expect((await call(stack, 'POST', '/admin/api/identities/link', { body: { a: ALICE, b: ALICE_SLACK } })).status).toBe(403);
    expect((await call(stack, 'DELETE', `/admin/api/identities/${enc(ALICE_SLACK)}`)).status).toBe(403);
    const form = await fetch(`${stack.baseUrl}/admin/memory/delete`, { method: 'POST', headers: bearer, body: new URLSearchParams({ person: ALICE }) });
    expect(form.status).toBe(403);
    const page = await call(stack, 'GET', `/admin/memory?person=${enc(ALICE)}`);
    expect(page.text).not.toContain('action="/admin/memory/delete"');
    expect(page.text).toContain('Read-only mode');
    expect((await call(stack, 'GET', `/admin/api/memory/${enc(ALICE)}/export`)).status).toBe(200);
    expect(agentsOf((await call(stack, 'GET', `/admin/api/memory/${enc(ALICE)}`)).body)).toEqual({
      default: ['Alice prefers <b>tea</b>'],
      ops: ['Alice is on call on Mondays'],
    });
  });
});
