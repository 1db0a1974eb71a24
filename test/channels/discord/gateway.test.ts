import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord, type FakeDiscordOptions } from '../../fakes/discord-server.js';
import { waitFor } from '../../helpers/processes.js';
import { startStack, type Stack, readyz as getReadyz } from '../../helpers/stack.js';

/** The discord.js gateway connection: readiness, reconnects, registration, intents. */

const GUILDS = 1 << 0;
const GUILD_MESSAGES = 1 << 9;
const DIRECT_MESSAGES = 1 << 12;
const MESSAGE_CONTENT = 1 << 15;

const open: { fake: FakeDiscord; stack?: Stack }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.stack?.close();
    await o.fake.close();
  }
});

async function fakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const fake = await startFakeDiscord(options);
  open.push({ fake });
  return fake;
}

async function stackOn(fake: FakeDiscord, name: string, env: Record<string, string> = {}): Promise<Stack> {
  const stack = await startStack(name, fake.env(env));
  open.find((o) => o.fake === fake)!.stack ??= stack;
  return stack;
}

const discordHealth = (stack: Stack) => stack.gateway.channels.find((c) => c.name === 'discord')!.health();
const readyz = async (stack: Stack) => {
  const res = await getReadyz(stack);
  return {
    status: res.status,
    body: (await res.json()) as { problems: string[]; channels: Record<string, { connected: boolean; lastEventAt?: string; detail?: string }> },
  };
};

describe('Discord gateway', () => {
  it('is not ready until READY, is ready after it, drops out on a disconnect, and resumes with the missed events replayed', async () => {
    const fake = await fakeDiscord({ holdReady: true });
    const stack = await stackOn(fake, 'dc-ready');
    stack.fake.setHandler(() => ({ content: 'answered after the resume' }));
    await waitFor('IDENTIFY', () => fake.gateway.identifies.length === 1, 10_000);
    expect(discordHealth(stack)).toEqual({ connected: false, detail: 'connecting to the Discord gateway' });
    const before = await readyz(stack);
    expect(before.status).toBe(503);
    expect(before.body.problems).toContain('discord: connecting to the Discord gateway');

    fake.releaseReady();
    await waitFor('connected', () => discordHealth(stack).connected, 10_000);
    const after = await readyz(stack);
    expect(after.status).toBe(200);
    expect(after.body.channels.discord).toMatchObject({ connected: true });
    expect(Date.parse(after.body.channels.discord!.lastEventAt!)).toBeGreaterThan(0);
    expect(fake.gateway.identifies[0]).toMatchObject({
      token: fake.token,
      intents: GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT,
      compress: false,
    });

    // The connection drops and the new one gets no HELLO yet: not ready meanwhile.
    fake.drop(4000, true);
    await waitFor('disconnected', () => !discordHealth(stack).connected, 10_000);
    expect(discordHealth(stack).detail).toBe('the gateway connection dropped; reconnecting');
    expect((await readyz(stack)).status).toBe(503);
    // A mention while the bot is away is replayed on RESUME and answered.
    const missed = fake.userMessage({ channel: fake.ids.general, content: `<@${fake.ids.app}> are you there?` });

    fake.releaseHello();
    await waitFor('resumed', () => discordHealth(stack).connected, 15_000);
    expect(fake.gateway.resumes).toEqual([expect.objectContaining({ token: fake.token, session_id: fake.gateway.sessionId })]);
    expect(fake.gateway.identifies).toHaveLength(1);
    await waitFor('the replayed mention answered', () => fake.botMessages(fake.ids.general).length === 1, 15_000);
    expect(fake.botMessages(fake.ids.general)[0]).toMatchObject({ content: 'answered after the resume', message_reference: { message_id: missed.id } });
  }, 60_000);

  it('registers the slash commands at start-up once: a restart with the same commands changes nothing', async () => {
    const fake = await fakeDiscord();
    const first = await stackOn(fake, 'dc-reg1', { DISCORD_GUILD_ID: fake.ids.guild });
    await waitFor('connected', () => discordHealth(first).connected, 10_000);
    expect(fake.calls('PUT', /commands$/).map((r) => r.path)).toEqual([`/applications/${fake.ids.app}/guilds/${fake.ids.guild}/commands`]);
    expect(fake.commands.guild.get(fake.ids.guild)!.map((c: { name: string }) => c.name)).toEqual([
      'ask',
      'reset',
      'stop',
      'status',
      'help',
      'agent',
      'memory',
      'forget',
      'schedules',
      'unschedule',
    ]);
    expect(fake.commands.global).toEqual([]);
    await first.close();
    open[0]!.stack = undefined;

    const second = await stackOn(fake, 'dc-reg2', { DISCORD_GUILD_ID: fake.ids.guild });
    await waitFor('connected again', () => discordHealth(second).connected, 10_000);
    expect(fake.calls('GET', /commands$/)).toHaveLength(2);
    expect(fake.calls('PUT', /commands$/)).toHaveLength(1);
  }, 60_000);

  it('mention-only mode (DISCORD_MESSAGE_CONTENT=0) asks for no privileged intent and still answers mentions', async () => {
    const fake = await fakeDiscord({ messageContentAllowed: false });
    const stack = await stackOn(fake, 'dc-mention-only', { DISCORD_MESSAGE_CONTENT: '0' });
    stack.fake.setHandler((req) => ({ content: `heard: ${String(req.body.messages.at(-1).content)}` }));
    await waitFor('connected', () => discordHealth(stack).connected, 10_000);
    expect(fake.gateway.identifies[0].intents).toBe(GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES);
    fake.userMessage({ channel: fake.ids.general, content: 'not for the bot, and invisible to it' });
    fake.userMessage({ channel: fake.ids.general, content: `<@${fake.ids.app}> visible because it mentions the bot` });
    await waitFor('the reply', () => fake.botMessages(fake.ids.general).length === 1, 15_000);
    expect(fake.botMessages(fake.ids.general)[0]!.content).toBe('heard: visible because it mentions the bot');
    expect(stack.fake.requests).toHaveLength(1);
  }, 60_000);

  it('a refused Message Content intent is reported by readiness with what to do', async () => {
    const fake = await fakeDiscord({ messageContentAllowed: false });
    const stack = await stackOn(fake, 'dc-intent');
    await waitFor('the refusal', () => discordHealth(stack).detail?.includes('Message Content'), 15_000);
    const { status, body } = await readyz(stack);
    expect(status).toBe(503);
    expect(body.channels.discord!.connected).toBe(false);
    expect(body.channels.discord!.detail).toContain('set DISCORD_MESSAGE_CONTENT=0');
    expect(fake.gateway.identifies).toHaveLength(1);
  }, 60_000);

  it('a rejected token is reported by readiness and not retried', async () => {
    const fake = await fakeDiscord();
    const stack = await stackOn(fake, 'dc-token', { DISCORD_TOKEN: 'not-the-token' });
    await waitFor('the rejection', () => discordHealth(stack).detail?.startsWith('Discord rejected DISCORD_TOKEN'), 15_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(fake.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['GET 401']);
    expect(fake.gateway.connections).toBe(0);
  }, 60_000);
});
