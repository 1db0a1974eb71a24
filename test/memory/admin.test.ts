import { afterAll, describe, expect, it } from 'vitest';
import { SessionKeys } from '../../src/queue/keys.js';
import { MemoryStore } from '../../src/memory/store.js';
import { Identities } from '../../src/memory/identity.js';
import { MemoryAdmin, MemoryAdminError } from '../../src/memory/admin.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

const redis = testRedis();
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await dropPrefix(redis, p);
  redis.disconnect();
});

const ALICE = 'telegram:42';
const ALICE_SLACK = 'slack:UALICE';
const BOB = 'slack:UBOB';
const NOW = Date.parse('2025-03-01T10:00:00Z');

/** A store, identities and the admin over a prefix of the test's own, with Alice and Bob remembered in two agents. */
async function seeded() {
  const prefix = uniquePrefix('memory-admin');
  prefixes.push(prefix);
  const keys = new SessionKeys(prefix, 'runs');
  const store = new MemoryStore(redis, keys, { maxEntries: 50 }, () => NOW);
  const identities = new Identities(redis, keys);
  const admin = new MemoryAdmin(store, identities, () => NOW + 1000);
  await store.remember({ agent: 'default', owner: ALICE }, 'Alice prefers tea', 'said');
  await store.remember({ agent: 'default', owner: ALICE }, 'Alice builds on atlas-7', 'derived');
  await store.remember({ agent: 'ops', owner: ALICE }, 'Alice is on call on Mondays', 'said');
  await store.remember({ agent: 'default', owner: BOB }, 'Bob prefers coffee', 'said');
  await store.remember({ agent: 'ops', owner: BOB }, 'Bob owns the billing service', 'said');
  return { store, identities, admin };
}

const texts = (listing: { agents: { agent: string; entries: { text: string }[] }[] }) =>
  Object.fromEntries(listing.agents.map((a) => [a.agent, a.entries.map((e) => e.text).sort()]));

describe('memory admin', () => {
  it("lists one person's memory in every agent, never another's", async () => {
    const { admin } = await seeded();
    const alice = await admin.list(ALICE);
    expect(alice.person).toBe(ALICE);
    expect(alice.resolvedFrom).toBeUndefined();
    expect(texts(alice)).toEqual({ default: ['Alice builds on atlas-7', 'Alice prefers tea'], ops: ['Alice is on call on Mondays'] });
    expect(alice.agents[0]!.entries.find((e) => e.text === 'Alice builds on atlas-7')).toMatchObject({ state: 'pending', provenance: 'derived' });
    expect(texts(await admin.list(BOB))).toEqual({ default: ['Bob prefers coffee'], ops: ['Bob owns the billing service'] });
    expect(await admin.list('discord:nobody')).toEqual({ person: 'discord:nobody', agents: [] });
  });

  it('exports plain JSON with ISO times and when it was taken', async () => {
    const { admin } = await seeded();
    const exported = await admin.export(ALICE);
    expect(JSON.parse(JSON.stringify(exported))).toEqual(exported);
    expect(exported.exportedAt).toBe('2025-03-01T10:00:01.000Z');
    expect(exported.agents.map((a) => a.agent)).toEqual(['default', 'ops']);
    expect(exported.agents[1]!.entries).toEqual([
      {
        id: expect.any(String),
        text: 'Alice is on call on Mondays',
        state: 'kept',
        provenance: 'said',
        createdAt: '2025-03-01T10:00:00.000Z',
        usedAt: '2025-03-01T10:00:00.000Z',
      },
    ]);
    expect(JSON.stringify(exported)).not.toContain('Bob');
  });

  it("deletes a person's memory everywhere, or in one agent, and leaves the other person's", async () => {
    const { admin, store } = await seeded();
    expect(await admin.delete(ALICE, 'ops')).toEqual({ person: ALICE, deleted: 1, agents: [{ agent: 'ops', deleted: 1 }] });
    expect(texts(await admin.list(ALICE))).toEqual({ default: ['Alice builds on atlas-7', 'Alice prefers tea'] });
    expect(await admin.delete(ALICE, 'nosuch')).toEqual({ person: ALICE, deleted: 0, agents: [] });
    expect(await admin.delete(ALICE)).toEqual({ person: ALICE, deleted: 2, agents: [{ agent: 'default', deleted: 2 }] });
    expect((await admin.list(ALICE)).agents).toEqual([]);
    expect(await admin.delete(ALICE)).toMatchObject({ deleted: 0 });
    expect(texts(await admin.list(BOB))).toEqual({ default: ['Bob prefers coffee'], ops: ['Bob owns the billing service'] });
    // What is remembered after a delete is kept as usual.
    await store.remember({ agent: 'default', owner: ALICE }, 'Alice moved to Lisbon', 'said');
    expect(texts(await admin.list(ALICE))).toEqual({ default: ['Alice moved to Lisbon'] });
  });

  it('an identity linked to a person means that person: list, whois, delete by it; its own earlier memory is shown and deleted too', async () => {
    const { admin, store } = await seeded();
    await store.remember({ agent: 'default', owner: ALICE_SLACK }, 'From Slack before the link', 'said');
    expect(await admin.whois(ALICE_SLACK)).toEqual({ identity: ALICE_SLACK, person: ALICE_SLACK, linked: false });
    expect(await admin.link(ALICE, ALICE_SLACK)).toEqual({ person: ALICE, identity: ALICE_SLACK, unused: 1 });
    expect(await admin.whois(ALICE_SLACK)).toEqual({ identity: ALICE_SLACK, person: ALICE, linked: true });
    expect(await admin.whois(ALICE)).toEqual({ identity: ALICE, person: ALICE, linked: false });

    const listing = await admin.list(ALICE_SLACK);
    expect(listing).toMatchObject({ person: ALICE, resolvedFrom: ALICE_SLACK });
    expect(texts(listing)).toEqual({ default: ['Alice builds on atlas-7', 'Alice prefers tea'], ops: ['Alice is on call on Mondays'] });
    expect(texts({ agents: listing.beforeLink! })).toEqual({ default: ['From Slack before the link'] });
    expect((await admin.export(ALICE_SLACK)).beforeLink).toHaveLength(1);
    // Asked by the person's own id, the linked identity's earlier memory is not found (there is no reverse index).
    expect((await admin.list(ALICE)).beforeLink).toBeUndefined();

    expect(await admin.delete(ALICE_SLACK)).toEqual({
      person: ALICE,
      resolvedFrom: ALICE_SLACK,
      deleted: 4,
      agents: [
        { agent: 'default', deleted: 3 },
        { agent: 'ops', deleted: 1 },
      ],
    });
    expect((await admin.list(ALICE)).agents).toEqual([]);
    expect(await admin.list(ALICE_SLACK)).toEqual({ person: ALICE, resolvedFrom: ALICE_SLACK, agents: [] });
    expect(texts(await admin.list(BOB))).toEqual({ default: ['Bob prefers coffee'], ops: ['Bob owns the billing service'] });

    expect(await admin.unlink(ALICE_SLACK)).toEqual({ identity: ALICE_SLACK, unlinked: true });
    expect(await admin.unlink(ALICE_SLACK)).toEqual({ identity: ALICE_SLACK, unlinked: false });
    expect((await admin.whois(ALICE_SLACK)).linked).toBe(false);
  });

  it("a channel's shared memory is listed and deleted by its id", async () => {
    const { admin, store } = await seeded();
    const channel = 'channel:slack:C0123';
    await store.remember({ agent: 'default', owner: channel }, 'Standup is at 9:30', 'said');
    expect(texts(await admin.list(channel))).toEqual({ default: ['Standup is at 9:30'] });
    expect((await admin.delete(channel)).deleted).toBe(1);
    expect(texts(await admin.list(ALICE)).default).toHaveLength(2);
  });

  it('refuses ids of no known form with a clear error', async () => {
    const { admin } = await seeded();
    for (const bad of ['42', 'telegram', 'mastodon:1', 'telegram:4 2', '', 'channel:']) {
      await expect(admin.list(bad), bad).rejects.toThrow(MemoryAdminError);
      await expect(admin.delete(bad), bad).rejects.toThrow(/neither a person \(platform:userId, e\.g\. telegram:42\) nor a channel/);
    }
    await expect(admin.link(ALICE, 'nonsense')).rejects.toThrow(/"nonsense" is not platform:userId/);
    await expect(admin.link(ALICE, undefined)).rejects.toThrow(MemoryAdminError);
    await expect(admin.link(ALICE, 'channel:slack:C1')).rejects.toThrow(/not platform:userId/);
    await expect(admin.link(ALICE, ALICE)).rejects.toThrow(/already itself/);
    await expect(admin.whois('x')).rejects.toThrow(MemoryAdminError);
    await expect(admin.delete(ALICE, 'two words')).rejects.toThrow(/not an agent name/);
    // Nothing was deleted by the refused calls.
    expect(texts(await admin.list(ALICE)).default).toHaveLength(2);
  });
});
