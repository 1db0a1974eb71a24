import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCookieValue } from '../../src/http/auth.js';
import { SECRET_HEADER } from '../../src/channels/telegram/webhook.js';
import { BOT_TOKEN as SLACK_BOT_TOKEN, startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { startFakeTelegram, TOKEN as TELEGRAM_TOKEN, type FakeTelegram } from '../fakes/telegram-server.js';
import { waitFor } from '../helpers/processes.js';
import { rawRequest, type RawResponse } from '../helpers/raw-request.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { plans, type Plan } from './fuzz-requests.js';

/**
 * Random and malformed requests, signed and unsigned, at every HTTP endpoint of the gateway:
 * no 5xx, the process keeps answering, and nothing a refused or skipped request carried is queued.
 */

const SEED = 20_241_313;
const REQUESTS = 1000;
const BATCH = 20;
const SIGNING_SECRET = 'fuzz-signing-secret-5d1e';
const WEBHOOK_SECRET = 'fuzz-webhook-secret_77';
const ADMIN_TOKEN = 'fuzz-admin-token-0c4f9a';

let stack: Stack;
let slack: FakeSlack;
let telegram: FakeTelegram;
beforeAll(async () => {
  slack = await startFakeSlack();
  telegram = await startFakeTelegram();
  stack = await startStack('fuzz', {
    SLACK_BOT_TOKEN,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: slack.apiUrl,
    TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/telegram/webhook',
    TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ADMIN_TOKEN,
    DM_POLICY: 'open',
  });
  await waitFor('both channels connected', () => stack.gateway.channels.every((c) => c.health().connected), 15_000);
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await slack?.close();
  await telegram?.close();
});

function slackHeaders(credential: string, body: Buffer): Record<string, string> {
  const now = Math.floor(Date.now() / 1000);
  const ts = { 'stale timestamp': now - 600, 'future timestamp': now + 3600 }[credential] ?? now;
  const secret = credential === 'other secret' ? 'not-the-secret' : SIGNING_SECRET;
  const sig = `v0=${createHmac('sha256', secret)
    .update(Buffer.concat([Buffer.from(`v0:${ts}:`), body]))
    .digest('hex')}`;
  switch (credential) {
    case 'unsigned':
      return {};
    case 'bad signature':
      return { 'x-slack-request-timestamp': String(ts), 'x-slack-signature': `v0=${'ab'.repeat(32)}` };
    case 'garbage timestamp':
      return { 'x-slack-request-timestamp': 'soon', 'x-slack-signature': sig };
    default:
      return {
        'x-slack-request-timestamp': String(ts),
        'x-slack-signature': sig,
        ...(credential === 'signed' && body.length % 3 === 0 && { 'x-slack-retry-num': 'x', 'x-slack-retry-reason': '\u00e9' }),
      };
  }
}

function credentialHeaders(plan: Plan, body: Buffer): Record<string, string> {
  if (plan.surface === 'slack') return slackHeaders(plan.credential, body);
  if (plan.surface === 'telegram')
    return (
      { secret: { [SECRET_HEADER]: WEBHOOK_SECRET }, wrong: { [SECRET_HEADER]: 'nope' }, 'secret with a suffix': { [SECRET_HEADER]: `${WEBHOOK_SECRET}x` } }[
        plan.credential
      ] ?? {}
    );
  const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
  return (
    {
      bearer: { authorization: `Bearer ${ADMIN_TOKEN}` },
      basic: { authorization: basic(`ops:${ADMIN_TOKEN}`) },
      cookie: { cookie: `sb_admin=${adminCookieValue(ADMIN_TOKEN)}` },
      'wrong bearer': { authorization: 'Bearer nope' },
      'malformed cookie': { cookie: 'sb_admin=%E0%A4%A; other=%' },
      'garbage basic': { authorization: 'Basic !!!not base64' },
    }[plan.credential] ?? {}
  );
}

let source = 0;
/** A fresh loopback address for each request: failed admin credentials are rate-limited per address. */
const nextSource = () => `127.77.${Math.floor(++source / 250) % 250}.${(source % 250) + 1}`;

interface Sent {
  plan: Plan;
  res?: RawResponse;
  error?: string;
}

async function send(plan: Plan): Promise<Sent> {
  const body = plan.body?.bytes;
  const headers = { ...credentialHeaders(plan, body ?? Buffer.alloc(0)), ...(plan.body?.contentType && { 'content-type': plan.body.contentType }) };
  try {
    return { plan, res: await rawRequest(stack.baseUrl, { method: plan.method, path: plan.path, headers, ...(body && { body }), from: nextSource() }) };
  } catch (err) {
    return { plan, error: err instanceof Error ? err.message : String(err) };
  }
}

const describePlan = (p: Plan) =>
  `${p.method} ${p.path.slice(0, 120)} [${p.surface}/${p.credential}${p.body ? `, ${p.body.kind}, ${p.body.contentType ?? 'no type'}, ${p.body.bytes.length} B` : ''}]`;

describe('HTTP fuzz: every endpoint, random and malformed requests', () => {
  it(`${REQUESTS} seeded requests: no 5xx, /healthz answers after every batch, nothing queued`, async () => {
    const all = fc.sample(plans, { seed: SEED, numRuns: REQUESTS });
    const sent: Sent[] = [];
    for (let i = 0; i < all.length; i += BATCH) {
      sent.push(...(await Promise.all(all.slice(i, i + BATCH).map(send))));
      const health = await rawRequest(stack.baseUrl, { method: 'GET', path: '/healthz' });
      expect([i, health.status]).toEqual([i, 200]);
    }

    const serverErrors = sent.filter((s) => (s.res?.status ?? 0) >= 500).map((s) => `${s.res!.status} ${describePlan(s.plan)}: ${s.res!.body.slice(0, 160)}`);
    // A connection cut without an answer is only acceptable for a huge body refused before it was read.
    const cut = sent.filter((s) => s.error !== undefined && (s.plan.body?.bytes.length ?? 0) < 64_000).map((s) => `${describePlan(s.plan)}: ${s.error}`);
    expect(serverErrors).toEqual([]);
    expect(cut).toEqual([]);

    // What reached the queue: only operator resets the admin API accepted (202).
    const resets = sent.filter((s) => s.plan.path.includes('/reset') && s.res?.status === 202).length;
    await new Promise((r) => setTimeout(r, 300));
    const seen = await stack.redis.keys(`${escapeGlob(stack.config.queue.prefix)}:seen:*`);
    expect(seen.filter((k) => !k.includes(':operator-reset-'))).toEqual([]);
    expect(seen).toHaveLength(resets);
    const jobs = await stack.queue.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized', 'waiting-children']);
    expect(
      jobs.filter((j) => !j.data.trigger?.eventId?.startsWith('operator-reset-') && !j.data.messages?.every((m) => m.eventId.startsWith('operator-reset-'))),
    ).toEqual([]);
    expect(telegram.calls.filter((c) => c.method === 'sendMessage')).toEqual([]);
    expect(slack.callsOf('chat.postMessage')).toEqual([]);

    // Figures for the report: what was sent and how it was answered.
    const byStatus = count(sent.map((s) => String(s.res?.status ?? 'cut')));
    const byKind = count(sent.map((s) => s.plan.body?.kind ?? 'no body'));
    console.info(JSON.stringify({ requests: sent.length, bySurface: count(sent.map((s) => s.plan.surface)), byStatus, byKind, resets }));
    expect(Object.keys(byStatus).filter((s) => s.startsWith('2')).length).toBeGreaterThan(0);
    expect(Object.keys(byStatus).filter((s) => s.startsWith('4')).length).toBeGreaterThan(2);
  }, 120_000);

  it('the same checks see a well-formed request queued (so the test above could fail)', async () => {
    await rawRequest(stack.baseUrl, { method: 'POST', path: '/admin/api/queue/resume', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const body = Buffer.from(
      JSON.stringify({
        type: 'event_callback',
        team_id: 'T0FAKE',
        event_id: 'EvFUZZCONTROL',
        authorizations: [{ user_id: 'U0BOT' }],
        event: { type: 'app_mention', user: 'U0ADA', text: '<@U0BOT> control', ts: '1700000001.000100', channel: 'C0CONTROL' },
      }),
    );
    const res = await rawRequest(stack.baseUrl, {
      method: 'POST',
      path: '/slack/events',
      headers: { 'content-type': 'application/json', ...slackHeaders('signed', body) },
      body,
    });
    expect(res.status).toBe(200);
    const update = Buffer.from(
      JSON.stringify({
        update_id: 1,
        message: {
          message_id: 1,
          date: Math.floor(Date.now() / 1000),
          chat: { id: 880_001, type: 'private' },
          from: { id: 880_001, is_bot: false, first_name: 'Ctl' },
          text: 'control',
        },
      }),
    );
    const tg = await rawRequest(stack.baseUrl, {
      method: 'POST',
      path: '/telegram/webhook',
      headers: { 'content-type': 'application/json', [SECRET_HEADER]: WEBHOOK_SECRET },
      body: update,
    });
    expect(tg.status).toBe(200);
    const seen = await stack.redis.keys(`${escapeGlob(stack.config.queue.prefix)}:seen:*`);
    expect(seen.filter((k) => /:seen:(slack|telegram):/.test(k) && !k.includes(':operator-reset-'))).toHaveLength(2);
  });
});

function escapeGlob(s: string): string {
  return s.replace(/[{}[\]*?\\]/g, '\\$&');
}

function count(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
