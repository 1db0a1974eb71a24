import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { MAX_PENDING_PER_PLATFORM, PAIRING_TTL_MS, PairingStore } from '../../src/access/pairing-store.js';
import type { InboundMessage } from '../../src/channels/types.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

const message = (platform: string, userId: string): InboundMessage => ({
  v: 1,
  id: `m-${userId}-${Math.random()}`,
  platform,
  conversation: `D-${userId}`,
  sender: { id: userId, name: `user ${userId}` },
  where: { kind: 'dm' },
  text: 'secret question',
  attachments: [],
  eventId: `e-${userId}-${Math.random()}`,
  receivedAt: 1,
  meta: { interactionToken: 'tok' },
});

describe('pairing store (real Redis)', () => {
  let redis: Redis;
  const prefix = uniquePrefix('pairing');
  let store: PairingStore;
  beforeAll(() => {
    redis = testRedis();
    store = new PairingStore(redis, prefix);
  });
  afterAll(async () => {
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  it('one live code per person; at most 3 pending per platform, even when a crowd asks at once', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => store.request(message('slack', `U${i}`))));
    expect(results.filter((r) => r.kind === 'issued')).toHaveLength(MAX_PENDING_PER_PLATFORM);
    expect(results.filter((r) => r.kind === 'full')).toHaveLength(8 - MAX_PENDING_PER_PLATFORM);
    const issued = results.flatMap((r) => (r.kind === 'issued' ? [r.request] : []));
    const again = await store.request(message('slack', issued[0]!.userId));
    expect(again).toMatchObject({ kind: 'pending', request: { code: issued[0]!.code } });
    // Another platform has its own three.
    expect((await store.request(message('discord', 'U0'))).kind).toBe('issued');
    // The stored reply target carries neither the text nor platform tokens.
    const raw = JSON.stringify(await redis.hgetall(`${prefix}:pairing:slack:codes`));
    expect(raw).not.toContain('secret question');
    expect(raw).not.toContain('tok');
  });

  it('approve lets the person in for good and frees the slot; a code is used once', async () => {
    const [first] = await store.pending('slack');
    const approved = await store.approve('slack', first!.code.toLowerCase(), 'cli');
    expect(approved?.userId).toBe(first!.userId);
    expect(await store.isApproved('slack', first!.userId)).toBe(true);
    expect(await store.approve('slack', first!.code, 'cli')).toBeUndefined();
    expect((await store.request(message('slack', first!.userId))).kind).toBe('approved');
    expect((await store.approved('slack')).map((u) => [u.userId, u.by, u.name])).toEqual([[first!.userId, 'cli', first!.name]]);
    expect((await store.request(message('slack', 'U-new'))).kind).toBe('issued');
  });

  it('deny drops a request without letting anyone in; revoke takes access away', async () => {
    const pending = await store.pending('slack');
    const denied = await store.deny('slack', pending[0]!.code);
    expect(denied?.userId).toBe(pending[0]!.userId);
    expect(await store.isApproved('slack', pending[0]!.userId)).toBe(false);
    const [user] = await store.approved('slack');
    expect(await store.revoke('slack', user!.userId)).toBe(true);
    expect(await store.revoke('slack', user!.userId)).toBe(false);
    expect(await store.isApproved('slack', user!.userId)).toBe(false);
  });

  it('an expired code cannot be approved and no longer holds a slot; its person waits out the cooldown', async () => {
    const now = Date.now();
    const old = await store.request(message('telegram', '77'), now - PAIRING_TTL_MS - 1);
    expect(old.kind).toBe('issued');
    const code = old.kind === 'issued' ? old.request.code : '';
    expect(await store.approve('telegram', code, 'api', now)).toBeUndefined();
    expect(await store.isApproved('telegram', '77')).toBe(false);
    for (const id of ['1', '2', '3']) expect((await store.request(message('telegram', id), now)).kind).toBe('issued');
    const stale = await store.request(message('telegram', '78'), now - PAIRING_TTL_MS - 1);
    expect(stale.kind).toBe('full');
    // Past the hour the three expire and a newcomer is served; 77, whose code expired unused, is not (test/security/pairing-slots).
    expect((await store.request(message('telegram', '79'), now + PAIRING_TTL_MS + 1)).kind).toBe('issued');
    expect((await store.request(message('telegram', '77'), now + PAIRING_TTL_MS + 1)).kind).toBe('cooldown');
  });
});
