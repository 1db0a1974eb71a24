import { afterEach, describe, expect, it } from 'vitest';
import { APPROVED_TEXT } from '../../src/access/pairing-admin.js';
import type { ChatMessage } from '../../src/agent/types.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { startFakeDiscord, type FakeDiscord, type FakeMessage } from '../fakes/discord-server.js';
import { snowflake } from '../fakes/discord-payloads.js';
import { waitFor } from '../helpers/processes.js';
import { startStack, type Stack } from '../helpers/stack.js';
import {
  ADMIN_TOKEN,
  adminApi,
  adminCli,
  codeIn,
  expectNothingQueued,
  expectPairingReply,
  expectSessionUntouched,
  jobCounts,
  NOT_ENABLED_TEXT,
  sleep,
  storedRequests,
} from './access-helpers.js';

/**
 * Access control on Discord, end to end: the real discord.js client on the gateway role against
 * the fake Discord (gateway MESSAGE_CREATE / INTERACTION_CREATE, REST), the real worker role,
 * real Redis and the fake model. Operators decide through the gateway's admin API and through
 * the admin CLI (its own process, which tells the person over Discord's REST API).
 */

interface World {
  fake: FakeDiscord;
  stack: Stack;
}

let world: World | undefined;
afterEach(async () => {
  await world?.stack.close();
  await world?.fake.close();
  world = undefined;
});

async function start(name: string, env: (fake: FakeDiscord) => Record<string, string>): Promise<World> {
  const fake = await startFakeDiscord();
  const stack = await startStack(name, fake.env({ ADMIN_TOKEN, ...env(fake) }));
  world = { fake, stack };
  const channel = stack.gateway.channels.find((c) => c.name === 'discord')!;
  await waitFor('the Discord gateway to be ready', () => channel.health().connected, 15_000);
  return world;
}

const userTexts = (body: { messages: ChatMessage[] }) => body.messages.filter((m) => m.role === 'user').map((m) => String(m.content));

/** The bot's channel messages (not interaction responses) in `channel`, oldest first. */
const posted = (fake: FakeDiscord, channel: string): FakeMessage[] => fake.botMessages(channel).filter((m) => m.via === 'channel');

async function nthPosted(fake: FakeDiscord, channel: string, n: number): Promise<FakeMessage> {
  await waitFor(`bot message #${n} in ${channel}`, () => posted(fake, channel).length >= n, 10_000);
  return posted(fake, channel)[n - 1]!;
}

describe('discord DM pairing (DM_POLICY=pairing)', () => {
  it('an unknown DM sender gets a code, nothing queued; the same code again; approved via the API → told, answered; revoked → a code again; approved via the CLI → told, answered', async () => {
    const { fake, stack } = await start('acc-dc-pair', () => ({ DM_POLICY: 'pairing' }));
    const { dmAlice, alice } = fake.ids;
    const session = sessionKeyOf({ platform: 'discord', conversation: dmAlice });
    stack.fake.setHandler((req) => ({ content: `You said: ${userTexts(req.body).at(-1)}` }));

    const hello = fake.userMessage({ channel: dmAlice, content: 'hello, can you read my notes?' });
    const first = await nthPosted(fake, dmAlice, 1);
    const code = codeIn(first.content);
    expectPairingReply(first.content, code);
    // A reply to her message.
    expect(first.message_reference?.message_id).toBe(hello.id);
    await expectNothingQueued(stack);
    await expectSessionUntouched(stack, session);
    expect(fake.calls('POST', /\/typing$/)).toEqual([]);
    expect(await storedRequests(stack, 'discord')).toEqual([expect.objectContaining({ code, platform: 'discord', userId: alice, name: 'Alice' })]);

    fake.userMessage({ channel: dmAlice, content: 'are you there?' });
    expect(codeIn((await nthPosted(fake, dmAlice, 2)).content)).toBe(code);
    expect(await storedRequests(stack, 'discord')).toHaveLength(1);
    await expectNothingQueued(stack);

    expect((await adminApi(stack, 'POST', `/discord/${code}/approve`, null)).status).toBe(401);
    // A Discord code is not a Slack code.
    expect((await adminApi(stack, 'POST', `/slack/${code}/approve`)).status).toBe(404);
    expect(await adminApi(stack, 'POST', `/discord/${code}/approve`)).toEqual({
      status: 200,
      body: { approved: true, platform: 'discord', userId: alice, name: 'Alice', told: true },
    });
    const told = await nthPosted(fake, dmAlice, 3);
    expect(told.content).toBe(APPROVED_TEXT);
    expect(told.message_reference).toBeUndefined();

    const ask = fake.userMessage({ channel: dmAlice, content: 'what is 2+2?' });
    const answer = await nthPosted(fake, dmAlice, 4);
    expect(answer).toMatchObject({ content: 'You said: what is 2+2?', message_reference: { message_id: ask.id } });
    expect(stack.fake.requests).toHaveLength(1);
    const seen = JSON.stringify(stack.fake.requests[0]!.body.messages);
    expect(seen).not.toContain('read my notes');
    expect(seen).not.toContain('are you there');
    await waitFor('the completed job', async () => (await jobCounts(stack)).completed === 1);

    // Revoked through the API: her next DM is not answered but gets a new code.
    expect(await adminApi(stack, 'POST', `/discord/users/${alice}/revoke`)).toEqual({ status: 200, body: { revoked: true } });
    expect((await adminApi(stack, 'POST', `/discord/users/${alice}/revoke`)).status).toBe(404);
    fake.userMessage({ channel: dmAlice, content: 'one more thing' });
    const again = await nthPosted(fake, dmAlice, 5);
    expectPairingReply(again.content);
    const code2 = codeIn(again.content);
    expect(code2).not.toBe(code);
    await sleep(200);
    expect(stack.fake.requests).toHaveLength(1);
    expect(await stack.redis.llen(stack.keys.inbox(session))).toBe(0);

    // Approved through the CLI (its own process, over REST).
    expect((await adminApi(stack, 'GET', '/discord')).body).toMatchObject({ pending: [{ code: code2, userId: alice, name: 'Alice' }], approved: [] });
    const cli = await adminCli(stack, ['approve', 'discord', code2], fake.env());
    expect({ code: cli.code, stdout: cli.stdout }).toEqual({ code: 0, stdout: `approved discord user ${alice} (Alice); told them\n` });
    expect((await nthPosted(fake, dmAlice, 6)).content).toBe(APPROVED_TEXT);
    expect((await adminApi(stack, 'POST', `/discord/${code2}/approve`)).status).toBe(404);

    fake.userMessage({ channel: dmAlice, content: 'the one more thing' });
    expect((await nthPosted(fake, dmAlice, 7)).content).toBe('You said: the one more thing');
    expect(stack.fake.requests).toHaveLength(2);
    expect(stack.fake.requests.flatMap((r) => userTexts(r.body))).not.toContain('one more thing');
    expect((await adminApi(stack, 'GET', '/discord')).body).toMatchObject({ pending: [], approved: [{ platform: 'discord', userId: alice, by: 'cli' }] });
  }, 60_000);

  it('/ask in a DM by an unknown user: the deferred response goes, the code comes as an ephemeral follow-up; /status gets the code too; nothing queued', async () => {
    const { fake, stack } = await start('acc-dc-slash', () => ({ DM_POLICY: 'pairing' }));
    const { dmAlice } = fake.ids;
    const ix = fake.slash({ name: 'ask', channel: dmAlice, prompt: 'what is in my calendar?' });
    await waitFor('the follow-up', () => ix.followups.length === 1, 10_000);
    expect(ix.callbackType).toBe(5);
    await waitFor('the deferred response removed', () => fake.messages.find((m) => m.id === ix.originalId)?.deleted, 5_000);
    const followup = fake.messages.find((m) => m.id === ix.followups[0])!;
    expect(followup.flags & 64).toBe(64);
    expectPairingReply(followup.content);
    const code = codeIn(followup.content);
    await expectNothingQueued(stack);
    expect(posted(fake, dmAlice)).toEqual([]);

    // An act-at-once command is refused the same way (the code, not the status).
    const status = fake.slash({ name: 'status', channel: dmAlice });
    await waitFor('the /status reply', () => status.callbackType !== undefined, 10_000);
    expect(status).toMatchObject({ callbackType: 4, callbackFlags: 64 | 4 });
    expect(codeIn(status.callbackContent)).toBe(code);

    // Then a plain DM: still the same code, one request stored.
    fake.userMessage({ channel: dmAlice, content: 'hello?' });
    expect(codeIn((await nthPosted(fake, dmAlice, 1)).content)).toBe(code);
    expect(await storedRequests(stack, 'discord')).toHaveLength(1);
    await sleep(200);
    await expectNothingQueued(stack);
    // The stored request holds where to tell her, never the interaction's token or what she asked.
    const stored = JSON.stringify(await storedRequests(stack, 'discord'));
    expect(stored).not.toContain(ix.token);
    expect(stored).not.toContain('calendar');

    // Approved: she is told in the DM (a channel message: the interaction is not used).
    expect((await adminApi(stack, 'POST', `/discord/${code}/approve`)).body).toMatchObject({ approved: true, told: true });
    expect((await nthPosted(fake, dmAlice, 2)).content).toBe(APPROVED_TEXT);
  }, 40_000);
});

describe('discord DM allowlist (DISCORD_DM_POLICY=allowlist)', () => {
  it('a listed user is answered; an unlisted one is told the assistant is private and their user id, nothing queued', async () => {
    const { fake, stack } = await start('acc-dc-allow', (f) => ({
      DM_POLICY: 'open',
      DISCORD_DM_POLICY: 'allowlist',
      ALLOWED_USERS: `discord:${f.ids.alice}`,
    }));
    const { dmAlice, bob } = fake.ids;
    stack.fake.setHandler((req) => ({ content: `Sure: ${userTexts(req.body).at(-1)}` }));

    // The fake has one DM channel; Bob writes into it as an unlisted DM sender (no guild_id).
    const fromBob = fake.userMessage({ channel: dmAlice, author: bob, content: 'let me in' });
    const refused = await nthPosted(fake, dmAlice, 1);
    expect(refused).toMatchObject({
      content: `Sorry, this assistant is private. Your Discord user id is ${bob}: ask its operator for access.`,
      message_reference: { message_id: fromBob.id },
    });
    await expectNothingQueued(stack);
    expect(await storedRequests(stack, 'discord')).toEqual([]);

    const fromAlice = fake.userMessage({ channel: dmAlice, content: 'hello' });
    expect(await nthPosted(fake, dmAlice, 2)).toMatchObject({ content: 'Sure: hello', message_reference: { message_id: fromAlice.id } });
    await waitFor('the completed job', async () => (await jobCounts(stack)).completed === 1);
    expect(stack.fake.requests).toHaveLength(1);
    expect(stack.fake.requests.flatMap((r) => userTexts(r.body))).toEqual(['hello']);
  }, 40_000);
});

describe('discord group policy (GROUP_POLICY=allowlist)', () => {
  it('ALLOWED_CHANNELS=discord:<guildId>: a mention in the guild is answered; DMs disabled: silence', async () => {
    const { fake, stack } = await start('acc-dc-guild', (f) => ({
      GROUP_POLICY: 'allowlist',
      ALLOWED_CHANNELS: `discord:${f.ids.guild}`,
      DISCORD_DM_POLICY: 'disabled',
    }));
    const { general, dmAlice, app } = fake.ids;
    stack.fake.setHandler((req) => ({ content: `On it: ${userTexts(req.body).at(-1)}` }));

    fake.userMessage({ channel: dmAlice, content: 'hello in private' });
    const asked = fake.userMessage({ channel: general, content: `<@${app}> summarise today` });
    expect(await nthPosted(fake, general, 1)).toMatchObject({ content: 'On it: summarise today', message_reference: { message_id: asked.id } });
    await waitFor('the completed job', async () => (await jobCounts(stack)).completed === 1);
    await sleep(300);
    expect(fake.botMessages(dmAlice)).toEqual([]);
    await expectSessionUntouched(stack, sessionKeyOf({ platform: 'discord', conversation: dmAlice }));
    expect(stack.fake.requests).toHaveLength(1);
  }, 40_000);

  it('ALLOWED_CHANNELS naming another guild and one channel: that channel and its thread are answered; another channel of this guild is refused and not queued', async () => {
    const otherGuild = snowflake();
    const { fake, stack } = await start('acc-dc-chan', (f) => ({
      GROUP_POLICY: 'allowlist',
      ALLOWED_CHANNELS: `discord:${otherGuild},discord:${f.ids.general}`,
    }));
    const { general, random, thread, app } = fake.ids;
    stack.fake.setHandler((req) => ({ content: `On it: ${userTexts(req.body).at(-1)}` }));

    const outside = fake.userMessage({ channel: random, content: `<@${app}> summarise this channel` });
    const refused = await nthPosted(fake, random, 1);
    expect(refused).toMatchObject({ content: NOT_ENABLED_TEXT, message_reference: { message_id: outside.id } });
    await expectNothingQueued(stack);
    // /ask there too: the deferred response goes, the line comes ephemerally.
    const ix = fake.slash({ name: 'ask', channel: random, prompt: 'summarise' });
    await waitFor('the follow-up', () => ix.followups.length === 1, 10_000);
    expect(fake.messages.find((m) => m.id === ix.followups[0])).toMatchObject({ content: NOT_ENABLED_TEXT, flags: 64 });
    await waitFor('the deferred response removed', () => fake.messages.find((m) => m.id === ix.originalId)?.deleted, 5_000);
    await expectNothingQueued(stack);

    const inChannel = fake.userMessage({ channel: general, content: `<@${app}> in the channel` });
    expect(await nthPosted(fake, general, 1)).toMatchObject({ content: 'On it: in the channel', message_reference: { message_id: inChannel.id } });
    // A thread counts through its parent channel.
    const inThread = fake.userMessage({ channel: thread, content: `<@${app}> in the thread` });
    expect(await nthPosted(fake, thread, 1)).toMatchObject({ content: 'On it: in the thread', message_reference: { message_id: inThread.id } });
    await waitFor('two completed jobs', async () => (await jobCounts(stack)).completed === 2);
    expect(stack.fake.requests.map((r) => userTexts(r.body).at(-1))).toEqual(['in the channel', 'in the thread']);
    await expectSessionUntouched(stack, sessionKeyOf({ platform: 'discord', conversation: random }));
    expect(posted(fake, random)).toHaveLength(1);
  }, 40_000);
});
