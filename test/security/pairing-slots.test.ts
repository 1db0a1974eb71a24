import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessGate } from '../../src/access/gate.js';
import {
  MAX_PENDING_PER_PLATFORM,
  PAIRING_COOLDOWN_MS,
  PAIRING_TTL_MS,
  PairingStore,
  type PairingRequest,
  type RequestResult,
} from '../../src/access/pairing-store.js';
import type { InboundMessage } from '../../src/channels/types.js';
import type { AccessConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/log.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

/**
 * Finding (medium): a platform has MAX_PENDING_PER_PLATFORM (3) live pairing codes, each valid an
 * hour. A code that expired unused freed its slot and its owner got a new code at once, so three
 * scripted accounts asking every hour held every slot forever, and every real person was told
 * "cannot take new access requests right now". Now a person whose code expired unused, or was
 * denied, gets no new code for PAIRING_COOLDOWN_MS (told when to ask again); the slot goes to
 * someone new. A person asking while their code is live gets the same code, never a longer one.
 */
const message = (platform: string, userId: string): InboundMessage => ({
  v: 1,
  id: `m-${userId}-${Math.random()}`,
  platform,
  conversation: `D-${userId}`,
  sender: { id: userId, name: `user ${userId}` },
  where: { kind: 'dm' },
  text: 'let me in',
  attachments: [],
  eventId: `e-${userId}-${Math.random()}`,
  receivedAt: 1,
});

const issued = (r: RequestResult) => {
  if (r.kind !== 'issued') throw new Error(`expected a new code, got ${r.kind}`);
  return r.request;
};

describe('security: strangers cannot hold every pairing slot of a platform', () => {
  let redis: Redis;
  const prefix = uniquePrefix('sec-pairing-slots');
  let store: PairingStore;
  beforeAll(() => {
    redis = testRedis();
    store = new PairingStore(redis, prefix);
  });
  afterAll(async () => {
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  it('the cooldown is a day', () => {
    expect(PAIRING_COOLDOWN_MS).toBe(24 * 3_600_000);
    expect(MAX_PENDING_PER_PLATFORM).toBe(3);
  });

  it('three strangers whose codes expired unused are refused a new one (told when to ask again); a fourth, new person gets a code', async () => {
    const t0 = 1_800_000_000_000;
    const strangers = ['bot-1', 'bot-2', 'bot-3'];
    const codes: PairingRequest[] = [];
    for (const id of strangers) codes.push(issued(await store.request(message('slack', id), t0)));
    expect((await store.request(message('slack', 'real-person'), t0 + 1_000)).kind).toBe('full');

    // Asking again while the code is live: the same code, the same expiry (no extension).
    const again = await store.request(message('slack', 'bot-1'), t0 + PAIRING_TTL_MS - 1_000);
    expect(again).toEqual({ kind: 'pending', request: codes[0] });

    // The hour is over: the three ask again at once, and again a day less a minute later.
    const expiredAt = t0 + PAIRING_TTL_MS;
    for (const at of [expiredAt + 1, expiredAt + PAIRING_COOLDOWN_MS - 60_000]) {
      for (const id of strangers) expect(await store.request(message('slack', id), at)).toEqual({ kind: 'cooldown', retryAt: expiredAt + PAIRING_COOLDOWN_MS });
    }
    expect(await store.pending('slack', expiredAt + 1)).toEqual([]);

    // Real people get the slots.
    const newcomer = issued(await store.request(message('slack', 'real-person'), expiredAt + 2));
    expect(codes.map((c) => c.code)).not.toContain(newcomer.code);
    for (const id of ['real-2', 'real-3']) issued(await store.request(message('slack', id), expiredAt + 3));
    expect((await store.request(message('slack', 'real-4'), expiredAt + 4)).kind).toBe('full');

    // After the cooldown a stranger may ask again: the strangers' records are pruned (the three
    // real people's codes have since expired unused too: they wait now).
    const later = expiredAt + PAIRING_COOLDOWN_MS + 1;
    const renewed = issued(await store.request(message('slack', 'bot-1'), later));
    expect(renewed.expiresAt).toBe(later + PAIRING_TTL_MS);
    expect(Object.keys(await redis.hgetall(`${prefix}:pairing:slack:cooldown`)).sort()).toEqual(['real-2', 'real-3', 'real-person']);
  });

  it('a denied person waits out the cooldown too; an approved one never does', async () => {
    const t0 = 1_900_000_000_000;
    const denied = issued(await store.request(message('discord', 'pest'), t0));
    expect((await store.deny('discord', denied.code, t0 + 5_000))?.userId).toBe('pest');
    expect(await store.request(message('discord', 'pest'), t0 + 6_000)).toEqual({ kind: 'cooldown', retryAt: t0 + 5_000 + PAIRING_COOLDOWN_MS });

    // An expired code the operator tries to approve also counts as expired unused.
    const slow = issued(await store.request(message('discord', 'slow'), t0));
    expect(await store.approve('discord', slow.code, 'cli', t0 + PAIRING_TTL_MS + 10)).toBeUndefined();
    expect(await store.request(message('discord', 'slow'), t0 + PAIRING_TTL_MS + 20)).toEqual({
      kind: 'cooldown',
      retryAt: t0 + PAIRING_TTL_MS + PAIRING_COOLDOWN_MS,
    });

    const friend = issued(await store.request(message('discord', 'friend'), t0));
    expect((await store.approve('discord', friend.code, 'cli', t0 + 1_000))?.userId).toBe('friend');
    expect((await store.request(message('discord', 'friend'), t0 + 2_000)).kind).toBe('approved');
  });

  it('the person is told how long to wait', async () => {
    const access: AccessConfig = {
      dm: { telegram: 'pairing', slack: 'pairing', discord: 'pairing' },
      allowedUsers: [],
      telegramGroupSenders: false,
      group: 'pairing',
      allowedChannels: [],
    };
    const gate = new AccessGate(access, store, createLogger('silent'));
    issued(await store.request(message('telegram', '4242'), Date.now() - PAIRING_TTL_MS - 1_000));
    const verdict = await gate.check(message('telegram', '4242'));
    expect(verdict).toEqual({
      pass: false,
      reason: 'pairing',
      reply: 'Sorry, this assistant is private, and your last access request has closed. You can ask again in 24 h.',
    });
  });
});
