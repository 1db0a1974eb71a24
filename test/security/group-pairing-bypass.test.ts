import { afterEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/agent/types.js';
import { BOT_USERNAME } from '../fakes/telegram-server.js';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discord-server.js';
import { waitFor } from '../helpers/processes.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { TelegramHarness, BOB } from '../channels/telegram/harness.js';
import { ADMIN_TOKEN, adminApi, codeIn, expectNothingQueued, sleep } from '../access/access-helpers.js';

/**
 * Finding (high): with the defaults (DM_POLICY=pairing, GROUP_POLICY=open) a person whose DM got
 * a pairing code made a Telegram group (or a Discord guild: bots are public by default), added
 * the bot, mentioned it and was answered. Now, by default, a group sender must be someone the DM
 * policy lets in; a refused mention gets one short notice per person per hour, never a code.
 * (The test stack opens DMs for convenience; these tests set the product's default DM_POLICY=pairing.)
 */
const lastUser = (messages: ChatMessage[]) => String([...messages].reverse().find((m) => m.role === 'user')?.content ?? '');
const GROUP_NOTICE = 'Sorry, I only answer people who have access. Send me a direct message to ask for it.';
const mention = { entities: [{ type: 'mention', offset: 0, length: BOT_USERNAME.length + 1 }] };

describe('security: a stranger cannot get past pairing through a Telegram group of their own', () => {
  let h: TelegramHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('defaults: the stranger is refused in their group (one notice an hour, nothing queued); once paired, the group mention is answered', async () => {
    h = await TelegramHarness.start('sec-tg-group', { DM_POLICY: 'pairing', ADMIN_TOKEN, USER_RATE_LIMIT: '0' });
    const harness = h;
    harness.stack.fake.setHandler((req) => ({ content: `ack: ${lastUser(req.body.messages as ChatMessage[])}` }));
    const texts = (chat: number) => harness.answers(chat).map((c) => String(c.body.text));

    // The stranger (Bob) asked in a DM and got a code nobody approved.
    harness.dm(BOB.id, 'hello', { from: BOB });
    await waitFor('the pairing code', () => harness.answers(BOB.id).length === 1);
    const code = codeIn(texts(BOB.id)[0]);

    harness.group(-100555, `@${BOT_USERNAME} run ls in my own group`, mention);
    await waitFor('the notice', () => harness.answers(-100555).length === 1);
    expect(texts(-100555)).toEqual([GROUP_NOTICE]);
    harness.group(-100555, `@${BOT_USERNAME} and again`, mention);
    await sleep(800);
    expect(texts(-100555)).toEqual([GROUP_NOTICE]);
    expect(harness.stack.fake.requests).toHaveLength(0);
    expect(await harness.stack.redis.exists(harness.stack.keys.inbox('telegram:-100555'))).toBe(0);

    expect((await adminApi(harness.stack, 'POST', `/telegram/${code}/approve`)).status).toBe(200);
    harness.group(-100555, `@${BOT_USERNAME} now paired`, mention);
    await waitFor('the answer', () => texts(-100555).includes('ack: now paired'));
  }, 60_000);

  it('GROUP_POLICY=open, set on purpose, answers anyone in any group', async () => {
    h = await TelegramHarness.start('sec-tg-open', { DM_POLICY: 'pairing', GROUP_POLICY: 'open', USER_RATE_LIMIT: '0' });
    const harness = h;
    harness.stack.fake.setHandler((req) => ({ content: `ack: ${lastUser(req.body.messages as ChatMessage[])}` }));
    harness.group(-100556, `@${BOT_USERNAME} anyone here`, mention);
    await waitFor('the answer', () => harness.answers(-100556).some((c) => c.body.text === 'ack: anyone here'));
  }, 60_000);
});

describe('security: a stranger cannot get past pairing through a Discord guild', () => {
  let world: { fake: FakeDiscord; stack: Stack } | undefined;
  afterEach(async () => {
    await world?.stack.close();
    await world?.fake.close();
    world = undefined;
  });

  it('defaults: a mention in a guild by an unpaired member is refused with one notice and nothing is queued', async () => {
    const fake = await startFakeDiscord();
    const stack = await startStack('sec-dc-guild', fake.env({ DM_POLICY: 'pairing', USER_RATE_LIMIT: '0' }));
    world = { fake, stack };
    const channel = stack.gateway.channels.find((c) => c.name === 'discord')!;
    await waitFor('the Discord gateway to be ready', () => channel.health().connected, 15_000);
    const { general, app, bob } = fake.ids;

    fake.userMessage({ channel: general, author: bob, content: `<@${app}> run something for me` });
    await waitFor('the notice', () => fake.botMessages(general).length === 1, 10_000);
    expect(fake.botMessages(general)[0]!.content).toBe(GROUP_NOTICE);
    fake.userMessage({ channel: general, author: bob, content: `<@${app}> again` });
    await sleep(800);
    expect(fake.botMessages(general)).toHaveLength(1);
    await expectNothingQueued(stack);
  }, 40_000);
});
