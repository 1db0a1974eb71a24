import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET_HEADER } from '../../src/channels/telegram/webhook.js';
import { BOT_TOKEN, startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { waitFor } from '../helpers/processes.js';
import { appMention, eventCallback, nextTs, postEvent, SIGNING_SECRET } from '../channels/slack/helpers.js';
import { TelegramHarness } from '../channels/telegram/harness.js';

const ADMIN_TOKEN = 'admin-token-for-drain-tests';
const bearer = { authorization: `Bearer ${ADMIN_TOKEN}` };
const TELEGRAM_SECRET = 'drain-webhook-secret';

/** A gateway with Slack over HTTP and Telegram by webhook, so both webhook routes are on its app. */
describe('a draining gateway', () => {
  let slack: FakeSlack;
  let h: TelegramHarness;
  beforeAll(async () => {
    slack = await startFakeSlack();
    h = await TelegramHarness.start('drain', {
      TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/telegram/webhook',
      TELEGRAM_WEBHOOK_SECRET: TELEGRAM_SECRET,
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      ADMIN_TOKEN,
    });
    await waitFor('ready', async () => (await fetch(`${h.stack.baseUrl}/readyz`)).status === 200);
  });
  afterAll(async () => {
    await h?.close();
    await slack?.close();
  });

  const url = (path: string) => `${h.stack.baseUrl}${path}`;
  const telegramUpdate = (updateId: number) =>
    fetch(url('/telegram/webhook'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', [SECRET_HEADER]: TELEGRAM_SECRET },
      body: JSON.stringify({ update_id: updateId, ...h.dmUpdate(3001, 'hello while draining') }),
    });

  async function expectRefused(res: Response): Promise<void> {
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toEqual({ ok: false, error: 'this gateway is shutting down, deliver again later' });
  }

  it('refuses new webhook events with 503 and Retry-After, reports not ready, and keeps the admin API', async () => {
    await h.stack.gateway.drain();

    await expectRefused(await postEvent(h.stack.baseUrl, eventCallback(appMention('C0GENERAL', nextTs(), 'hello while draining'))));
    await expectRefused(await telegramUpdate(1));
    await expectRefused(await fetch(url('/any/other/route'), { method: 'POST' }));
    expect(await h.stack.queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized')).toEqual({
      waiting: 0,
      active: 0,
      completed: 0,
      failed: 0,
      delayed: 0,
      prioritized: 0,
    });

    expect((await fetch(url('/healthz'))).status).toBe(200);
    const ready = await fetch(url('/readyz'), { headers: bearer });
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as { draining: boolean; problems: string[] };
    expect(body.draining).toBe(true);
    expect(body.problems[0]).toMatch(/^draining/);

    // The channels were stopped: Telegram's webhook registration is left for the other gateways.
    expect(h.channel().health()).toMatchObject({ connected: false, detail: 'stopped' });
    expect(h.tg.webhook?.url).toBe('https://bot.example.com/telegram/webhook');

    expect((await fetch(url('/admin/api/sessions'), { headers: bearer })).status).toBe(200);
    const pause = await fetch(url('/admin/api/queue/pause'), { method: 'POST', headers: bearer });
    expect([pause.status, await pause.json()]).toEqual([200, { paused: true }]);
    expect((await fetch(url('/admin/api/queue/resume'), { method: 'POST', headers: bearer })).status).toBe(200);
    const login = await fetch(url('/admin/login'), { method: 'POST', body: new URLSearchParams({ token: ADMIN_TOKEN }), redirect: 'manual' });
    expect(login.status).toBe(303);
  });

  it('drain() again changes nothing (close() after it is the teardown)', async () => {
    await h.stack.gateway.drain();
    await expectRefused(await telegramUpdate(2));
  });
});
