import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { SECRET_HEADER, webhookPath, webhookSecretFor } from '../../../src/channels/telegram/webhook.js';
import { TOKEN } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers/processes.js';
import { TelegramHarness } from './harness.js';

const SECRET = 'webhook-secret_123';

describe('telegram webhook mode (TELEGRAM_WEBHOOK_URL)', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-hook', { TELEGRAM_WEBHOOK_URL: 'https://bot.example.com/telegram/webhook', TELEGRAM_WEBHOOK_SECRET: SECRET });
    h.stack.fake.setHandler((req) => ({ content: `ack: ${String((req.body.messages as ChatMessage[]).at(-1)?.content)}` }));
  });
  afterAll(async () => {
    await h?.close();
  });

  const post = (update: unknown, secret?: string) =>
    fetch(`${h.stack.baseUrl}/telegram/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(secret !== undefined && { [SECRET_HEADER]: secret }) },
      body: JSON.stringify(update),
    });

  it('registers the webhook with its secret and only message and button-press updates, and never polls', () => {
    expect(h.tg.webhook).toEqual({ url: 'https://bot.example.com/telegram/webhook', secret_token: SECRET, allowed_updates: ['message', 'callback_query'] });
    expect(h.tg.callsOf('getUpdates')).toEqual([]);
    expect(h.channel().health().connected).toBe(true);
  });

  it('refuses a request without the secret header or with a wrong one, and queues nothing', async () => {
    const chat = 2001;
    const update = { update_id: 1, ...h.dmUpdate(chat, 'intruder') };
    expect((await post(update)).status).toBe(401);
    expect((await post(update, 'wrong-secret')).status).toBe(401);
    expect((await post(update, `${SECRET}x`)).status).toBe(401);
    await new Promise((r) => setTimeout(r, 300));
    expect(h.stack.fake.requests).toHaveLength(0);
    expect(h.answers(chat)).toEqual([]);
  });

  it('accepts the right secret and acknowledges as soon as the update is queued, before the run answers', async () => {
    const chat = 2002;
    h.stack.fake.script([{ content: 'slow answer', delayMs: 1500 }]);
    const res = await post({ update_id: 2, ...h.dmUpdate(chat, 'hello by webhook') }, SECRET);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    expect(h.answers(chat)).toEqual([]); // acknowledged while the run has not answered yet
    await waitFor('the answer', () => h.answers(chat).length === 1, 15_000);
    expect(h.answers(chat)[0]!.body.text).toBe('slow answer');
    expect(h.channel().health().lastEventAt).toBeGreaterThan(Date.now() - 60_000);
  });

  it('a webhook retry of the same update (same update_id and message) runs once', async () => {
    const chat = 2003;
    const before = h.stack.fake.requests.length;
    const update = { update_id: 3, ...h.dmUpdate(chat, 'retry me') };
    const [a, b] = await Promise.all([post(update, SECRET), post(update, SECRET)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    await waitFor('the answer', () => h.answers(chat).length === 1);
    expect((await post(update, SECRET)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 400));
    expect(h.answers(chat)).toHaveLength(1);
    expect(h.stack.fake.requests.length - before).toBe(1);
  });

  it('a redelivered command is answered once', async () => {
    const chat = 2004;
    const update = { update_id: 4, ...h.dmUpdate(chat, '/status', { entities: [{ type: 'bot_command', offset: 0, length: 7 }] }) };
    await post(update, SECRET);
    await post(update, SECRET);
    await waitFor('the status reply', () => h.answers(chat).length === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(h.answers(chat).map((a) => a.body.text)).toEqual(['No run is active.']);
  });

  it('an update with the right secret but a malformed message is acknowledged (200) and skipped, so Telegram does not deliver it forever', async () => {
    const chat = 2005;
    const good = h.dmUpdate(chat, 'fine').message;
    const bad = [
      { ...good, chat: undefined },
      { ...good, text: 42 },
      { ...good, entities: 'bold' },
      { ...good, text: 'hi @x', entities: [{ type: 'text_mention', offset: 3, length: 2 }] },
    ];
    for (const [i, message] of bad.entries()) {
      const res = await post({ update_id: 50 + i, message }, SECRET);
      expect([i, res.status]).toEqual([i, 200]);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(await h.stack.queue.getJobCounts('waiting', 'active', 'completed')).toMatchObject({ waiting: 0, active: 0 });
    expect(h.answers(chat)).toEqual([]);
  });

  it('a body that is not an update is a 400', async () => {
    expect((await post({ hello: 'world' }, SECRET)).status).toBe(400);
  });
});

describe('telegram webhook settings', () => {
  it('derives a stable secret Telegram accepts when none is configured, and uses the configured one otherwise', () => {
    const derived = webhookSecretFor(TOKEN, undefined);
    expect(derived).toMatch(/^[A-Za-z0-9_-]{1,256}$/);
    expect(webhookSecretFor(TOKEN, undefined)).toBe(derived);
    expect(webhookSecretFor('123:other', undefined)).not.toBe(derived);
    expect(derived).not.toContain(TOKEN.split(':')[1]);
    expect(webhookSecretFor(TOKEN, 'mine')).toBe('mine');
  });

  it('serves the path of the public URL', () => {
    expect(webhookPath('https://bot.example.com/telegram/webhook')).toBe('/telegram/webhook');
    expect(webhookPath('https://bot.example.com')).toBe('/');
  });
});
