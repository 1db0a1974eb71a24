import { describe, expect, it } from 'vitest';
import { chooseRedis, DEFAULT_PROBE, probeAddress, type RedisFacts } from '../setup/redis-choice.js';
import { REDIS_URL } from '../helpers/redis.js';

const never = () => {
  throw new Error('not asked');
};

function facts(over: Partial<RedisFacts>): RedisFacts {
  return { testRedisUrl: undefined, probe: DEFAULT_PROBE, probeAnswers: never, hasRedisServer: never, ...over };
}

describe('npm test: which Redis', () => {
  it('TEST_REDIS_URL is used as given, nothing probed', async () => {
    expect(await chooseRedis(facts({ testRedisUrl: 'redis://10.0.0.5:7000' }))).toEqual({ kind: 'given', url: 'redis://10.0.0.5:7000' });
  });

  it('a Redis answering on the probe address is shared; redis-server is not looked for', async () => {
    expect(await chooseRedis(facts({ probeAnswers: () => true }))).toEqual({ kind: 'shared', url: 'redis://127.0.0.1:6379' });
    expect(await chooseRedis(facts({ probe: '127.0.0.1:6390', probeAnswers: async () => true }))).toEqual({ kind: 'shared', url: 'redis://127.0.0.1:6390' });
  });

  it('nothing answering and redis-server on the PATH: a private server', async () => {
    expect(await chooseRedis(facts({ probeAnswers: () => false, hasRedisServer: () => true }))).toEqual({ kind: 'private' });
  });

  it('nothing answering and no redis-server: one line saying how to get Redis', async () => {
    const c = await chooseRedis(facts({ probe: '127.0.0.1:6390', probeAnswers: () => false, hasRedisServer: async () => false }));
    expect(c.kind).toBe('missing');
    const message = c.kind === 'missing' ? c.message : '';
    expect(message).not.toContain('\n');
    expect(message).toContain('nothing answers on 127.0.0.1:6390');
    for (const how of ['apt install redis-server', 'brew install redis', 'docker compose up -d redis', 'TEST_REDIS_URL']) expect(message).toContain(how);
  });

  it('the probe address comes from SWITCHBOARD_TEST_REDIS_PROBE, else 127.0.0.1:6379', () => {
    expect(probeAddress({})).toBe('127.0.0.1:6379');
    expect(probeAddress({ SWITCHBOARD_TEST_REDIS_PROBE: '' })).toBe('127.0.0.1:6379');
    expect(probeAddress({ SWITCHBOARD_TEST_REDIS_PROBE: '127.0.0.1:6390' })).toBe('127.0.0.1:6390');
    expect(probeAddress({ SWITCHBOARD_TEST_REDIS_PROBE: 'redis://127.0.0.1:6390' })).toBe('127.0.0.1:6390');
  });

  it('the global setup chose before this worker started, and the worker sees its choice', () => {
    expect(process.env.TEST_REDIS_URL).toMatch(/^redis:\/\/.+:\d+$/);
    expect(REDIS_URL).toBe(process.env.TEST_REDIS_URL);
  });
});
