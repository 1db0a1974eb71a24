import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionKeys } from '../../src/queue/keys.js';
import { MemoryStore } from '../../src/memory/store.js';
import { spawnNode } from '../helpers/processes.js';
import { dropPrefix, REDIS_URL, testRedis, uniquePrefix } from '../helpers/redis.js';

const redis = testRedis();
const prefix = uniquePrefix('admin-cli-memory');
const store = new MemoryStore(redis, new SessionKeys(prefix, 'runs'), { maxEntries: 50 });

/** `npm run admin -- …` as its own process, against the test's prefix. */
async function admin(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const p = spawnNode('src/cli/admin.ts', args, { REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn' });
  const code = await p.exited;
  return { code, out: p.stdout(), err: p.stderr() };
}

beforeAll(async () => {
  await store.remember({ agent: 'default', owner: 'telegram:42' }, 'Alice prefers tea', 'said');
  await store.remember({ agent: 'ops', owner: 'telegram:42' }, 'Alice is on call on Mondays', 'said');
  await store.remember({ agent: 'default', owner: 'slack:UBOB' }, 'Bob prefers coffee', 'said');
});
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
});

describe('npm run admin -- identity … / memory …', () => {
  it('links an identity, then exports the person by it as JSON; lists, deletes and unlinks', { timeout: 60_000 }, async () => {
    const linked = await admin('identity', 'link', 'telegram:42', 'slack:UALICE');
    expect(linked).toMatchObject({ code: 0, out: 'slack:UALICE is now person telegram:42\n' });
    expect(await admin('identity', 'show', 'slack:UALICE')).toMatchObject({ code: 0, out: 'slack:UALICE is person telegram:42 (linked)\n' });

    const exported = await admin('memory', 'export', 'slack:UALICE');
    expect(exported.code).toBe(0);
    const json = JSON.parse(exported.out);
    expect(json).toMatchObject({ person: 'telegram:42', resolvedFrom: 'slack:UALICE', exportedAt: expect.stringMatching(/Z$/) });
    expect(json.agents.map((a: { agent: string; entries: { text: string }[] }) => [a.agent, a.entries.map((e) => e.text)])).toEqual([
      ['default', ['Alice prefers tea']],
      ['ops', ['Alice is on call on Mondays']],
    ]);
    expect(exported.out).not.toContain('Bob');

    const listed = await admin('memory', 'list', 'telegram:42');
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(/^person telegram:42\nagent default \(1\):\n {2}\w+ {2}Alice prefers tea/);

    expect(await admin('memory', 'delete', 'slack:UALICE', 'ops')).toMatchObject({
      code: 0,
      out: 'deleted 1 entry of telegram:42 (slack:UALICE): ops 1\n',
    });
    expect(await admin('memory', 'delete', 'slack:UALICE', 'ops')).toMatchObject({ code: 1, out: 'no memory of telegram:42 (slack:UALICE) in agent "ops"\n' });
    expect(await store.list({ agent: 'default', owner: 'telegram:42' })).toHaveLength(1);
    expect(await store.list({ agent: 'default', owner: 'slack:UBOB' })).toHaveLength(1);

    expect(await admin('identity', 'unlink', 'slack:UALICE')).toMatchObject({ code: 0, out: 'slack:UALICE is its own person again\n' });
    expect(await admin('identity', 'unlink', 'slack:UALICE')).toMatchObject({ code: 1, out: 'slack:UALICE was not linked\n' });
  });

  it('bad input exits 2 with the reason, as the pairing commands do', { timeout: 60_000 }, async () => {
    const [bad, none, extra, unknown] = await Promise.all([
      admin('memory', 'list', 'nonsense'),
      admin('memory'),
      admin('identity', 'link', 'telegram:1'),
      admin('memory', 'purge', 'telegram:1'),
    ]);
    expect(bad).toMatchObject({ code: 2, out: '' });
    expect(bad.err).toContain('"nonsense" is neither a person (platform:userId, e.g. telegram:42) nor a channel');
    expect(none.code).toBe(2);
    expect(none.err).toContain('memory delete <person> [agent]');
    expect(extra.code).toBe(2);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('unknown memory command "purge"');
  });
});
