import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordAPIError } from 'discord.js';
import {
  classify,
  DiscordApiError,
  DiscordNetworkError,
  DiscordRateLimitError,
  interactionGone,
  redactRoute,
  safeError,
} from '../../../src/channels/discord/errors.js';
import { DiscordRest, withRetries } from '../../../src/channels/discord/rest.js';
import { registerCommands, sameCommands, SLASH_COMMANDS } from '../../../src/channels/discord/slash.js';
import { startFakeDiscord, type FakeDiscord } from '../../fakes/discord-server.js';

/** A call that fails with the given errors in turn, then answers 'ok'; records the sleeps asked for. */
function scripted(errors: Error[]) {
  const sleeps: number[] = [];
  let calls = 0;
  return {
    sleeps,
    calls: () => calls,
    call: async () => {
      calls++;
      const e = errors.shift();
      if (e) throw e;
      return 'ok';
    },
    sleep: async (ms: number) => void sleeps.push(ms),
  };
}

describe('withRetries: classify, then retry or rethrow', () => {
  it('waits out a 429 for as long as Discord asks, even for a write', async () => {
    const s = scripted([new DiscordRateLimitError('POST /x', 350, false)]);
    await expect(withRetries(s.call, { idempotent: false, sleep: s.sleep })).resolves.toBe('ok');
    expect(s.sleeps).toEqual([350]);
    expect(s.calls()).toBe(2);
  });

  it('does not wait longer than the cap: the 429 is thrown', async () => {
    const s = scripted([new DiscordRateLimitError('POST /x', 90_000, true)]);
    await expect(withRetries(s.call, { idempotent: true, sleep: s.sleep, maxWaitMs: 60_000 })).rejects.toBeInstanceOf(DiscordRateLimitError);
    expect(s.calls()).toBe(1);
  });

  it('retries a 5xx or a lost response only when sending twice is harmless', async () => {
    const idem = scripted([new DiscordApiError(502, 0, 'PATCH /x', 'bad gateway'), new DiscordNetworkError('PATCH /x', new Error('ECONNRESET'))]);
    await expect(withRetries(idem.call, { idempotent: true, sleep: idem.sleep })).resolves.toBe('ok');
    expect(idem.sleeps).toEqual([500, 1_500]);

    const write = scripted([new DiscordApiError(500, 0, 'POST /x', 'oops')]);
    await expect(withRetries(write.call, { idempotent: false, sleep: write.sleep })).rejects.toMatchObject({ status: 500 });
    expect(write.calls()).toBe(1);
    const lost = scripted([new DiscordNetworkError('POST /x', new Error('timeout'))]);
    await expect(withRetries(lost.call, { idempotent: false, sleep: lost.sleep })).rejects.toBeInstanceOf(DiscordNetworkError);
    expect(lost.calls()).toBe(1);
  });

  it('never retries a client error, and stops after its attempts', async () => {
    const s = scripted([new DiscordApiError(403, 50013, 'POST /x', 'Missing Permissions')]);
    await expect(withRetries(s.call, { idempotent: true, sleep: s.sleep })).rejects.toMatchObject({ status: 403, code: 50013 });
    expect(s.calls()).toBe(1);
    const many = scripted(Array.from({ length: 6 }, () => new DiscordApiError(503, 0, 'GET /x', 'down')));
    await expect(withRetries(many.call, { idempotent: true, sleep: many.sleep, attempts: 3 })).rejects.toMatchObject({ status: 503 });
    expect(many.calls()).toBe(3);
  });
});

describe('classify and redaction', () => {
  it('reads retry_after (seconds with decimals) from the body, else the header', () => {
    expect(classify('r', 429, { message: 'You are being rate limited.', retry_after: 0.35, global: false }, '1')).toMatchObject({
      retryAfterMs: 350,
      global: false,
    });
    expect(classify('r', 429, undefined, '2')).toMatchObject({ retryAfterMs: 2000 });
  });

  it("keeps Discord's code and message", () => {
    const e = classify('PATCH /webhooks/1/:token/messages/@original', 401, { message: 'Invalid Webhook Token', code: 50027 }, null);
    expect(e).toMatchObject({ status: 401, code: 50027 });
    expect(e.message).toBe('PATCH /webhooks/1/:token/messages/@original → 401 (50027): Invalid Webhook Token');
    expect(interactionGone(e)).toBe(true);
    expect(interactionGone(classify('r', 403, { message: 'Missing Access', code: 50001 }, null))).toBe(false);
  });

  it('logs a discord.js REST error without its URL (which holds the interaction token)', () => {
    const url = 'https://discord.com/api/v10/interactions/123/secret-token/callback';
    const e = new DiscordAPIError({ message: 'Unknown interaction', code: 10062 }, 10062, 404, 'POST', url, { body: { type: 5 } });
    expect(JSON.stringify(e)).toContain('secret-token');
    expect(safeError(e)).toEqual({ name: 'DiscordAPIError[10062]', message: 'Unknown interaction', status: 404, code: 10062 });
  });

  it('never names an interaction token in a route', () => {
    expect(redactRoute('POST', '/interactions/123/secret-token/callback?with_response=false')).toBe('POST /interactions/123/:token/callback');
    expect(redactRoute('PATCH', '/webhooks/9/secret-token/messages/@original')).toBe('PATCH /webhooks/9/:token/messages/@original');
  });
});

describe('DiscordRest against the fake Discord', () => {
  let fake: FakeDiscord;
  beforeAll(async () => {
    fake = await startFakeDiscord();
  });
  afterAll(async () => {
    await fake.close();
  });

  it('sends the bot token and gets the gateway URL', async () => {
    const rest = new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl });
    const info = await rest.request<{ url: string; shards: number }>('GET', '/gateway/bot');
    expect(info.url).toBe(`${fake.base.replace('http', 'ws')}/gateway`);
    expect(fake.requests.at(-1)!.auth).toBe(`Bot ${fake.token}`);
  });

  it('a wrong token is a 401 DiscordApiError', async () => {
    const rest = new DiscordRest({ token: 'wrong', apiUrl: fake.apiUrl });
    await expect(rest.request('GET', '/users/@me')).rejects.toMatchObject({
      name: 'DiscordApiError',
      status: 401,
      message: 'GET /users/@me → 401: 401: Unauthorized',
    });
  });

  it("an expired interaction token's error does not contain the token", async () => {
    const ix = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'x' });
    fake.expire(ix.id);
    const rest = new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl });
    const err = await rest.request('PATCH', `/webhooks/${fake.ids.app}/${ix.token}/messages/@original`, { auth: false, body: { content: 'x' } }).then(
      () => new Error('no error'),
      (e: unknown) => e as Error,
    );
    expect(err).toMatchObject({ status: 401, code: 50027 });
    expect(err.message).not.toContain(ix.token);
  });

  it('an unreachable Discord is a DiscordNetworkError (and a GET is retried before giving up)', async () => {
    const rest = new DiscordRest({ token: fake.token, apiUrl: 'http://127.0.0.1:9/api', retry: { attempts: 2, sleep: async () => undefined } });
    await expect(rest.request('GET', '/gateway/bot')).rejects.toBeInstanceOf(DiscordNetworkError);
  });
});

describe('slash command registration', () => {
  it('compares only the fields we set, in any order', () => {
    const asDiscordReturnsThem = [...SLASH_COMMANDS]
      .reverse()
      .map((c) => ({ ...c, id: '1', application_id: '2', version: '3', default_member_permissions: null, nsfw: false, options: c.options ?? [] }));
    expect(sameCommands(asDiscordReturnsThem, SLASH_COMMANDS)).toBe(true);
    expect(sameCommands(asDiscordReturnsThem.slice(1), SLASH_COMMANDS)).toBe(false);
    expect(
      sameCommands(
        asDiscordReturnsThem.map((c) => (c.name === 'stop' ? { ...c, description: 'old text' } : c)),
        SLASH_COMMANDS,
      ),
    ).toBe(false);
  });

  it('registers once and leaves an identical registration alone (globally, or in one guild)', async () => {
    const fake = await startFakeDiscord();
    try {
      const rest = new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl });
      expect(await registerCommands(rest, fake.ids.app, undefined)).toBe('updated');
      expect(await registerCommands(rest, fake.ids.app, undefined)).toBe('unchanged');
      expect(fake.calls('PUT', /commands$/)).toHaveLength(1);
      expect(fake.commands.global.map((c: { name: string }) => c.name).sort()).toEqual([
        'agent',
        'ask',
        'forget',
        'help',
        'memory',
        'reset',
        'schedules',
        'status',
        'stop',
        'unschedule',
      ]);
      const ask = fake.commands.global.find((c: { name: string }) => c.name === 'ask');
      expect(ask.options).toEqual([{ type: 3, name: 'prompt', description: 'What you want done or answered', required: true, max_length: 4000 }]);

      expect(await registerCommands(rest, fake.ids.app, fake.ids.guild)).toBe('updated');
      expect(fake.calls('PUT', new RegExp(`/guilds/${fake.ids.guild}/commands$`))).toHaveLength(1);
      expect(await registerCommands(rest, fake.ids.app, fake.ids.guild)).toBe('unchanged');
      await expect(registerCommands(rest, fake.ids.app, '1234')).rejects.toMatchObject({ status: 403, code: 50001 });
    } finally {
      await fake.close();
    }
  });
});
