import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Api } from 'grammy';
import type { Update } from 'grammy/types';
import type { Redis } from 'ioredis';
import { Poller } from '../../../src/channels/telegram/polling.js';
import { PollingLease } from '../../../src/channels/telegram/lease.js';
import { startFakeTelegram, TOKEN, type FakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers/processes.js';
import { dropPrefix, testRedis, uniquePrefix } from '../../helpers/redis.js';

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

function capturingLogger() {
  const lines: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { log, lines };
}

const WARN = 40;

describe('telegram long polling', () => {
  let fake: FakeTelegram;
  const pollers: Poller[] = [];
  beforeEach(async () => {
    fake = await startFakeTelegram();
  });
  afterEach(async () => {
    await Promise.all(pollers.splice(0).map((p) => p.stop()));
    await fake.close();
  });

  function poller(handle: (u: Update) => Promise<void>, extra: Partial<ConstructorParameters<typeof Poller>[0]> = {}) {
    const { log, lines } = capturingLogger();
    const p = new Poller({
      api: new Api(TOKEN, { apiRoot: fake.apiRoot }),
      handle,
      log,
      allowedUpdates: ['message'],
      pollTimeoutSec: 5,
      conflictBackoffMs: 300,
      conflictMaxMs: 2_000,
      errorBackoffMs: 100,
      standbyRetryMs: 100,
      ...extra,
    });
    pollers.push(p);
    return { p, lines };
  }

  const dm = (text: string) => ({ message: fake.message({ chat: { id: 42, type: 'private' }, from: { id: 42, is_bot: false, first_name: 'Ada' }, text }) });

  it('hands updates over in order and confirms them with the next offset', async () => {
    const seen: number[] = [];
    const { p } = poller(async (u) => void seen.push(u.update_id));
    p.start();
    const ids = [fake.pushUpdate(dm('one')), fake.pushUpdate(dm('two')), fake.pushUpdate(dm('three'))];
    await waitFor('three updates', () => seen.length === 3);
    expect(seen).toEqual(ids);
    expect(p.state).toEqual({ connected: true });
    await waitFor('the confirming poll', () => fake.callsOf('getUpdates').some((c) => c.body.offset === ids[2]! + 1));
    // Polling cleared any webhook first, and asked only for messages.
    expect(fake.calls[0]!.method).toBe('deleteWebhook');
    expect(fake.callsOf('getUpdates')[0]!.body.allowed_updates).toEqual(['message']);
  });

  it('an update whose hand-over failed is not confirmed: it is fetched and handled again', async () => {
    const attempts: number[] = [];
    const { p, lines } = poller(async (u) => {
      attempts.push(u.update_id);
      if (attempts.length === 1) throw new Error('redis is down');
    });
    p.start();
    const id = fake.pushUpdate(dm('keep me'));
    await waitFor('a second attempt', () => attempts.length === 2);
    expect(attempts).toEqual([id, id]);
    expect(lines.some((l) => l.msg.includes('not handed over') && l.updateId === id)).toBe(true);
    await waitFor('connected again', () => p.state.connected);
  });

  it('a second poller on the token (409 Conflict) is logged once, shown in readiness and backed off, not looped', async () => {
    const { p, lines } = poller(async () => undefined);
    p.start();
    await waitFor('first poll pending', () => fake.pendingPolls() === 1);
    // A rogue process polls the same token in a tight loop for a while.
    const rogue = new Api(TOKEN, { apiRoot: fake.apiRoot });
    let stopRogue = false;
    const rogueLoop = (async () => {
      while (!stopRogue) await rogue.getUpdates({ timeout: 1 }).catch(() => undefined);
    })();
    await waitFor('the conflict shows in readiness', () => !p.state.connected && p.state.detail?.startsWith('409 Conflict'));
    // Ours are the calls without the rogue's timeout of 1 s.
    const ourCalls = () => fake.callsOf('getUpdates').filter((c) => c.body.timeout !== 1).length;
    const before = ourCalls();
    await new Promise((r) => setTimeout(r, 1500));
    stopRogue = true;
    await rogueLoop;
    // Backing off 0.3 s, 0.6 s, 1.2 s… allows a handful of polls in 1.5 s; a retry loop would make hundreds.
    expect(ourCalls() - before).toBeLessThanOrEqual(12);
    expect(fake.callsOf('getUpdates').filter((c) => c.body.timeout === 1).length).toBeGreaterThan(ourCalls() - before);
    const conflictWarnings = lines.filter((l) => l.level === WARN && l.msg.includes('409 Conflict'));
    expect(conflictWarnings).toHaveLength(1);
    expect(conflictWarnings[0]!.msg).toContain('another process is polling this bot token');
    // Once the other poller is gone, polling resumes and says so.
    await waitFor('resumed', () => p.state.connected, 10_000);
    expect(lines.some((l) => l.msg === 'telegram polling resumed after a conflict')).toBe(true);
    const seen: number[] = [];
    const { p: second } = poller(async (u) => void seen.push(u.update_id));
    await p.stop();
    second.start();
    const id = fake.pushUpdate(dm('after the conflict'));
    await waitFor('delivered after the conflict', () => seen.includes(id));
  });

  it('a rejected token is shown in readiness with a clear line', async () => {
    const { log, lines } = capturingLogger();
    const p = new Poller({ api: new Api('1:revoked', { apiRoot: fake.apiRoot }), handle: async () => undefined, log, allowedUpdates: ['message'] });
    pollers.push(p);
    p.start();
    await waitFor('token rejected', () => p.state.detail?.startsWith('the bot token was rejected'));
    expect(lines.filter((l) => l.msg.includes('rejected the bot token'))).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain('revoked');
  });

  describe('with the polling lease (gateways sharing a Redis)', () => {
    let redis: Redis;
    let prefix: string;
    beforeEach(() => {
      redis = testRedis();
      prefix = uniquePrefix('tg-lease');
    });
    afterEach(async () => {
      await dropPrefix(redis, prefix);
      redis.disconnect();
    });

    it('only the lease holder polls; the other stands by, ready, and takes over when the holder stops', async () => {
      const key = `${prefix}:telegram:poller:7000001`;
      const seenA: number[] = [];
      const seenB: number[] = [];
      const a = poller(async (u) => void seenA.push(u.update_id), { lease: new PollingLease(redis, key, 'gw-a', 3_000) });
      a.p.start();
      await waitFor('A polls', () => a.p.state.connected && fake.pendingPolls() === 1);
      const b = poller(async (u) => void seenB.push(u.update_id), { lease: new PollingLease(redis, key, 'gw-b', 3_000) });
      b.p.start();
      await waitFor('B stands by', () => b.p.state.detail?.startsWith('standby'));
      expect(b.p.state.connected).toBe(true);
      const first = fake.pushUpdate(dm('to A'));
      await waitFor('A handled it', () => seenA.includes(first));
      expect(fake.calls.filter((c) => c.error === 409)).toEqual([]);

      await a.p.stop();
      expect(await redis.get(key)).not.toBe('gw-a');
      await waitFor('B took over', () => b.p.state.connected && b.p.state.detail === undefined);
      const second = fake.pushUpdate(dm('to B'));
      await waitFor('B handled it', () => seenB.includes(second));
      expect(seenB).toEqual([second]);
      expect(await redis.get(key)).toBe('gw-b');
      expect(fake.calls.filter((c) => c.error === 409)).toEqual([]);
    });
  });
});
