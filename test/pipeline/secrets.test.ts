import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/agent/types.js';
import { SECRET_HEADER } from '../../src/channels/telegram/webhook.js';
import { adminCookieValue } from '../../src/http/auth.js';
import { createLogger } from '../../src/log.js';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction } from '../fakes/discord-server.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { BOT_ID, startFakeTelegram, type FakeTelegram } from '../fakes/telegram-server.js';
import { appMention, eventCallback, nextTs, signed } from '../channels/slack/helpers.js';
import { waitFor } from '../helpers/processes.js';
import { dumpPrefix, keysHolding } from '../helpers/redis-dump.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * Every credential configured, with distinctive random values, the pipeline driven to answers
 * (and a failure) on Slack, Telegram and Discord: no secret in the logs (debug level), in any
 * Redis value under the test's prefix, in the dashboard's JSON or in /metrics.
 */

const rnd = (label: string) => `${label}-${randomBytes(12).toString('hex')}`;
const SECRETS = {
  SLACK_BOT_TOKEN: `xoxb-${rnd('slackbot')}`,
  SLACK_SIGNING_SECRET: rnd('slacksign'),
  TELEGRAM_BOT_TOKEN: `${BOT_ID}:${rnd('tgbot')}`,
  TELEGRAM_WEBHOOK_SECRET: rnd('tghook'),
  DISCORD_TOKEN: rnd('discordbot'),
  OPENAI_API_KEY: `sk-${rnd('openai')}`,
  ADMIN_TOKEN: rnd('admin'),
};
const WEBHOOK_URL = 'https://bot.example.com/telegram/webhook';

/** Each secret, and the parts that would still be one if printed alone (a token's secret half, the admin cookie). */
function needles(interactions: FakeInteraction[]): [string, string][] {
  return [
    ...Object.entries(SECRETS),
    ['TELEGRAM_BOT_TOKEN (secret part)', SECRETS.TELEGRAM_BOT_TOKEN.split(':')[1]!],
    ['admin cookie', adminCookieValue(SECRETS.ADMIN_TOKEN)],
    ...interactions.map((ix): [string, string] => [`interaction token ${ix.id}`, ix.token]),
  ];
}

const leaks = (where: string, text: string, list: [string, string][]) =>
  list.filter(([, value]) => text.includes(value)).map(([name]) => `${name} in ${where}`);

let logs = '';
let stack: Stack;
let slack: FakeSlack;
let telegram: FakeTelegram;
let discord: FakeDiscord;
let ask: FakeInteraction;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs += chunk.toString('utf8');
      done();
    },
  });
  slack = await startFakeSlack({ botToken: SECRETS.SLACK_BOT_TOKEN });
  telegram = await startFakeTelegram({ token: SECRETS.TELEGRAM_BOT_TOKEN });
  discord = await startFakeDiscord({ token: SECRETS.DISCORD_TOKEN });
  stack = await startStack(
    'secrets',
    {
      ...SECRETS,
      ...discord.env(),
      SLACK_API_URL: slack.apiUrl,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      TELEGRAM_WEBHOOK_URL: WEBHOOK_URL,
      DM_POLICY: 'open',
      AGENT_MODEL_RETRIES: '0',
    },
    { log: createLogger('debug', 'switchboard', sink) },
  );
  await waitFor('every channel connected', () => stack.gateway.channels.length === 3 && stack.gateway.channels.every((c) => c.health().connected), 20_000);
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await Promise.all([slack?.close(), telegram?.close(), discord?.close()]);
});

describe('secrets stay out of logs, Redis, the dashboard and metrics', () => {
  it('after answered and failed runs on every platform', async () => {
    stack.fake.setHandler((req) => {
      const text = String((req.body.messages as ChatMessage[]).filter((m) => m.role === 'user').at(-1)?.content);
      // The failing run: the model server refuses, and its error is what the run reports.
      if (text.includes('fail please')) return { status: 500 };
      if (req.body.messages.length === 2) return { content: 'Looking around.', toolCalls: [{ name: 'list_files', arguments: '{}' }] };
      return { content: `answer to: ${text}` };
    });
    const postSlack = async (text: string) => {
      const body = JSON.stringify(eventCallback(appMention('C0SECRET', nextTs(), text)));
      const res = await fetch(`${stack.baseUrl}/slack/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signed(body, undefined, SECRETS.SLACK_SIGNING_SECRET) },
        body,
      });
      expect(res.status).toBe(200);
    };
    await postSlack('hello from slack');
    const update = {
      update_id: 1,
      message: telegram.message({
        chat: { id: 5151, type: 'private' },
        from: { id: 5151, is_bot: false, first_name: 'Tess' },
        text: 'hello from telegram',
        document: { file_id: 'no-such-file', file_unique_id: 'u1', file_name: 'notes.txt', file_size: 12 },
      }),
    };
    const hook = await fetch(`${stack.baseUrl}/telegram/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [SECRET_HEADER]: SECRETS.TELEGRAM_WEBHOOK_SECRET },
      body: JSON.stringify(update),
    });
    expect(hook.status).toBe(200);
    // Failure paths log errors: a document Telegram cannot find, an interaction webhook that refuses its token.
    discord.fail({ method: 'PATCH', path: /^\/webhooks\//, status: 401, body: { message: 'Invalid Webhook Token', code: 50027 }, times: 1 });
    ask = discord.slash({ name: 'ask', channel: discord.ids.general, prompt: 'hello from discord' });
    await waitFor('three completed runs', async () => (await stack.queue.getJobCounts('completed')).completed === 3, 30_000);
    await postSlack('fail please');
    await waitFor('the failed run', async () => (await stack.queue.getJobCounts('failed')).failed === 1, 30_000);
    await waitFor('every reply settled', async () => (await stack.redis.keys(`${stack.config.queue.prefix.replace(/[{}]/g, '\\$&')}:s:*:outbox`)).length === 0);
    expect(slack.callsOf('chat.postMessage').some((c) => String(c.params.text).startsWith('answer to: hello from slack'))).toBe(true);
    expect(logs).toContain('interaction token no longer valid');
    expect(discord.botMessages(discord.ids.general).some((m) => m.content.includes('answer to: hello from discord'))).toBe(true);

    const list = needles([ask]);
    const found: string[] = [];

    // Logs, at debug level, of both roles.
    expect(logs).toContain('run ended');
    found.push(...leaks('logs', logs, list));

    // Every key under the prefix, whatever its type.
    const dump = await dumpPrefix(stack.redis, stack.config.queue.prefix);
    // (Sets exist only while something is pending; dumpPrefix reads them too.)
    expect([...new Set(dump.map((d) => d.type))]).toEqual(expect.arrayContaining(['string', 'list', 'hash', 'zset', 'stream']));
    for (const [name, value] of list) found.push(...keysHolding(dump, value).map((k) => `${name} in Redis ${k}`));

    // The dashboard's JSON, the admin API, each run's record, /metrics — with the admin cookie, as a browser would.
    const cookie = await login();
    const get = async (path: string) => {
      const res = await fetch(`${stack.baseUrl}${path}`, { headers: { cookie, accept: 'application/json' } });
      expect([path, res.status]).toEqual([path, 200]);
      return res.text();
    };
    const q = encodeURIComponent(stack.queue.name);
    const pages: string[] = ['/admin/api/sessions', '/metrics', '/admin/queues/api/queues', '/admin/queues/api/redis/stats'];
    for (const status of ['latest', 'completed', 'failed']) pages.push(`/admin/queues/api/queues?activeQueue=${q}&status=${status}&page=1&jobsPerPage=50`);
    const jobs = await stack.queue.getJobs(['completed', 'failed']);
    expect(jobs).toHaveLength(4);
    for (const job of jobs) {
      pages.push(`/admin/queues/api/queues/${q}/${encodeURIComponent(job.id!)}`, `/admin/queues/api/queues/${q}/${encodeURIComponent(job.id!)}/logs`);
      if (job.data.runId) pages.push(`/admin/runs/${encodeURIComponent(job.data.runId)}?format=json`, `/admin/runs/${encodeURIComponent(job.data.runId)}`);
    }
    let dashboard = '';
    for (const path of pages) {
      const text = await get(path);
      dashboard += text;
      found.push(...leaks(`GET ${path}`, text, list));
    }
    expect(dashboard).toContain('hello from discord'); // the pages do show the runs' messages

    expect(found).toEqual([]);
  }, 90_000);
});

async function login(): Promise<string> {
  const res = await fetch(`${stack.baseUrl}/admin/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: SECRETS.ADMIN_TOKEN }).toString(),
    redirect: 'manual',
  });
  expect(res.status).toBe(303);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}
