import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/agent/types.js';
import { APPROVED_TEXT } from '../../src/access/pairing-admin.js';
import { BOT_USERNAME, TOKEN } from '../fakes/telegram-server.js';
import { REDIS_URL } from '../helpers/redis.js';
import { spawnNode, waitFor } from '../helpers/processes.js';
import { TelegramHarness } from '../channels/telegram/harness.js';

const ADMIN_TOKEN = 'admin-token-for-access-tests';
const CODE = /\n([A-HJKMNP-Z2-9]{8})\n/;
const lastUser = (messages: ChatMessage[]) => String([...messages].reverse().find((m) => m.role === 'user')?.content ?? '');

/**
 * Pairing, limits and the queue cap through the real grammY channel, roles, Redis and admin
 * CLI/API, against the fake Bot API.
 */
describe('telegram access: pairing end to end', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-access', { DM_POLICY: 'pairing', ADMIN_TOKEN, USER_RATE_LIMIT: '0' });
    h.stack.fake.setHandler((req) => ({ content: `ack: ${lastUser(req.body.messages as ChatMessage[])}` }));
  });
  afterAll(async () => h?.close());

  const texts = (chat: number) => h.answers(chat).map((c) => String(c.body.text));
  const codeOf = async (chat: number, nth = 1): Promise<string> => {
    await waitFor(`reply ${nth} in chat ${chat}`, () => h.answers(chat).length >= nth);
    const match = CODE.exec(texts(chat)[nth - 1]!);
    if (!match) throw new Error(`no code in ${texts(chat)[nth - 1]}`);
    return match[1]!;
  };
  const admin = (...args: string[]) => {
    const env = { REDIS_URL, QUEUE_PREFIX: h.stack.config.queue.prefix, TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: h.tg.apiRoot };
    const p = spawnNode('src/cli/admin.ts', args, env);
    return p.exited.then((code) => ({ code, out: p.stdout(), err: p.stderr() }));
  };
  const api = (path: string, method = 'POST') =>
    fetch(`${h.stack.baseUrl}/admin/api/pairing${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const nothingQueued = async (chat: number) => {
    expect(await h.stack.redis.exists(h.stack.keys.inbox(`telegram:${chat}`))).toBe(0);
    expect(h.stack.fake.requests.filter((r) => lastUser(r.body.messages as ChatMessage[]).includes(`from ${chat}`))).toEqual([]);
  };

  it('an unknown sender gets a code and nothing else: not queued, not shown to the model; writing again shows the same code', async () => {
    h.dm(6001, 'from 6001: what is in notes.md?');
    const code = await codeOf(6001);
    expect(texts(6001)[0]).toContain('This assistant is private');
    h.dm(6001, 'from 6001: hello?');
    expect(await codeOf(6001, 2)).toBe(code);
    await nothingQueued(6001);
    expect(await h.stack.queue.count()).toBe(0);
  });

  it('approved with the CLI: the person is told, and their next message is answered', async () => {
    const code = await codeOf(6001);
    const listed = await admin('pairing', 'list', 'telegram');
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(new RegExp(`telegram\\s+${code}\\s+user 6001`));
    const approved = await admin('pairing', 'approve', 'telegram', code.toLowerCase());
    expect([approved.code, approved.out.trim()]).toEqual([0, 'approved telegram user 6001 (Ada (@ada)); told them']);
    await waitFor('the approval notice', () => texts(6001).includes(APPROVED_TEXT));
    h.dm(6001, 'from 6001: now list the files');
    await waitFor('the answer', () => texts(6001).includes('ack: from 6001: now list the files'));
    // The messages sent before approval were never read.
    expect(
      h
        .userTexts()
        .flat()
        .filter((t) => t.includes('from 6001')),
    ).toEqual(['from 6001: now list the files']);
    expect((await admin('pairing', 'approve', 'telegram', code)).code).toBe(1);
  });

  it('approved through the API; an unknown or expired code is a 404; the fourth pending request gets no code', async () => {
    for (const chat of [6002, 6003, 6004]) h.dm(chat, `from ${chat}: hi`);
    const [c2, c3] = [await codeOf(6002), await codeOf(6003), await codeOf(6004)];
    h.dm(6005, 'from 6005: hi');
    await waitFor('the refusal', () => h.answers(6005).length === 1);
    expect(texts(6005)[0]).toContain('cannot take new access requests');
    expect(texts(6005)[0]).not.toMatch(CODE);
    await nothingQueued(6005);

    const res = await api(`/telegram/${c2}/approve`);
    expect([res.status, await res.json()]).toEqual([200, { approved: true, platform: 'telegram', userId: '6002', name: 'Ada (@ada)', told: true }]);
    await waitFor('6002 told', () => texts(6002).includes(APPROVED_TEXT));

    // Expire 6003's code (as an hour passing would).
    const key = `${h.stack.config.queue.prefix}:pairing:telegram:codes`;
    const stored = JSON.parse((await h.stack.redis.hget(key, c3))!) as { expiresAt: number };
    await h.stack.redis.hset(key, c3, JSON.stringify({ ...stored, expiresAt: Date.now() - 1 }));
    expect((await api(`/telegram/${c3}/approve`)).status).toBe(404);
    expect((await api('/telegram/ZZZZZZZZ/approve')).status).toBe(404);
    expect((await api('/irc/ZZZZZZZZ/approve')).status).toBe(400);
    // Its slot is free again: the next newcomer gets a code.
    h.dm(6006, 'from 6006: hi');
    await codeOf(6006);

    const list = (await (await api('/telegram', 'GET')).json()) as { pending: { userId: string; to?: unknown }[]; approved: { userId: string }[] };
    expect(list.pending.map((p) => p.userId).sort()).toEqual(['6004', '6006']);
    expect(list.pending.every((p) => p.to === undefined)).toBe(true);
    expect(list.approved.map((u) => u.userId).sort()).toEqual(['6001', '6002']);
  });

  it('deny and revoke: a denied person learns nothing new; a revoked one gets a code again', async () => {
    const c4 = await codeOf(6004);
    const denied = await admin('pairing', 'deny', 'telegram', c4);
    expect([denied.code, denied.out.trim()]).toEqual([0, 'denied telegram user 6004 (Ada (@ada))']);
    expect(texts(6004)).toHaveLength(1);
    const revoked = await admin('pairing', 'revoke', 'telegram', '6002');
    expect([revoked.code, revoked.out.trim()]).toEqual([0, 'revoked telegram user 6002']);
    h.dm(6002, 'from 6002: still there?');
    await waitFor('a new code', () => texts(6002).some((t) => CODE.test(t)));
    expect((await admin('pairing', 'bogus')).code).toBe(2);
  });

  it('refusals are counted by platform and reason', async () => {
    const metrics = await h.stack.metrics.registry.getSingleMetricAsString('switchboard_refusals_total');
    expect(metrics).toMatch(/platform="telegram",reason="pairing"} [5-9]/);
  });
});

describe('telegram access: allowlist, groups, rate limit and queue cap', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-limits', {
      TELEGRAM_DM_POLICY: 'allowlist',
      ALLOWED_USERS: 'telegram:7001,telegram:7002,telegram:7003',
      GROUP_POLICY: 'allowlist',
      ALLOWED_CHANNELS: 'telegram:-1007',
      USER_RATE_LIMIT: '3',
      SESSION_QUEUE_MAX: '2',
    });
    h.stack.fake.setHandler((req) => ({ content: `ack: ${lastUser(req.body.messages as ChatMessage[])}` }));
  });
  afterAll(async () => h?.close());
  const texts = (chat: number) => h.answers(chat).map((c) => String(c.body.text));

  it('allowlist: a listed id is answered; anyone else is told their id and nothing is queued', async () => {
    h.dm(7001, 'listed');
    await waitFor('the answer', () => texts(7001).includes('ack: listed'));
    h.dm(7099, 'stranger');
    await waitFor('the refusal', () => h.answers(7099).length === 1);
    expect(texts(7099)[0]).toBe('Sorry, this assistant is private. Your Telegram user id is 7099: ask its operator for access.');
    expect(await h.stack.redis.exists(h.stack.keys.inbox('telegram:7099'))).toBe(0);
  });

  it('group allowlist: a mention in a listed group is answered; in another group the bot says it is not enabled there', async () => {
    const mention = { entities: [{ type: 'mention', offset: 0, length: BOT_USERNAME.length + 1 }] };
    h.group(-1007, `@${BOT_USERNAME} in the listed group`, mention);
    await waitFor('the group answer', () => texts(-1007).includes('ack: in the listed group'));
    h.group(-1008, `@${BOT_USERNAME} in another group`, mention);
    await waitFor('the refusal', () => h.answers(-1008).length === 1);
    expect(texts(-1008)[0]).toBe('Sorry, I am not enabled in this conversation.');
    expect(await h.stack.redis.exists(h.stack.keys.inbox('telegram:-1008'))).toBe(0);
  });

  it('USER_RATE_LIMIT: past 3 a minute, one notice with the wait, the rest dropped quietly, /stop still works', async () => {
    for (const n of [1, 2, 3, 4, 5]) h.dm(7002, `burst ${n}`);
    await waitFor('the notice', () => texts(7002).some((t) => t.startsWith('You are sending messages faster')));
    h.dm(7002, '/stop');
    await waitFor('the stop answer', () => texts(7002).some((t) => t === 'Nothing is running.' || t === 'Stopping the current run…'));
    await waitFor('the answers', () => texts(7002).filter((t) => t.startsWith('ack:')).length >= 1);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(texts(7002).filter((t) => t.startsWith('You are sending'))).toHaveLength(1);
    const seen = h.userTexts().flat().join('\n');
    expect(seen).not.toContain('burst 4');
    expect(seen).not.toContain('burst 5');
  });

  it('SESSION_QUEUE_MAX: a message past the cap is refused with a notice, never dropped silently; the running turn does not count', async () => {
    h.stack.fake.setHandler(async (req) => {
      await new Promise((r) => setTimeout(r, 1_500));
      return { content: `ack: ${lastUser(req.body.messages as ChatMessage[])}` };
    });
    // Four people in one group (one message each: USER_RATE_LIMIT stays out of it), so each message is a turn of its own.
    const mention = { entities: [{ type: 'mention', offset: 0, length: BOT_USERNAME.length + 1 }] };
    const ask = (n: number) => h.group(-1007, `@${BOT_USERNAME} q${n}`, { ...mention, from: { id: 7100 + n, is_bot: false, first_name: `P${n}` } });
    const inbox = () => h.stack.redis.llen(h.stack.keys.inbox('telegram:-1007'));
    ask(1);
    await waitFor('q1 running', () => h.stack.fake.requests.some((r) => lastUser(r.body.messages as ChatMessage[]).endsWith('q1')));
    ask(2);
    await waitFor('q2 waiting', async () => (await inbox()) === 2);
    ask(3);
    await waitFor('q3 waiting beside q2 (the running q1 is not counted)', async () => (await inbox()) === 3);
    ask(4);
    await waitFor('the refusal', () => texts(-1007).some((t) => t.includes('2 messages are already waiting')));
    await waitFor('q3 answered', () => texts(-1007).some((t) => t.startsWith('ack:') && t.endsWith('q3')), 20_000);
    expect(
      h
        .userTexts()
        .flat()
        .some((t) => t.includes('q4')),
    ).toBe(false);
    const metrics = await h.stack.metrics.registry.getSingleMetricAsString('switchboard_refusals_total');
    expect(metrics).toMatch(/reason="queue_full"} 1/);
    expect(metrics).toMatch(/reason="rate_limited"} 2/);
  });
});
