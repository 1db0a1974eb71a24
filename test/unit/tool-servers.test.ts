import { afterAll, describe, expect, it } from 'vitest';
import { forgetToolServers, reportToolServers, toolServerProblems } from '../../src/queue/tool-servers.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

const redis = testRedis();
const prefix = uniquePrefix('tool-servers');
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
});

describe('MCP server reports for /readyz', () => {
  it('names a server not connected on some worker, counts the workers, and forgets stale or stopped workers', async () => {
    const now = Date.now();
    await reportToolServers(
      redis,
      prefix,
      'w1',
      [
        { name: 'fs', state: 'connected', tools: 4 },
        { name: 'tracker', state: 'down', tools: 0, error: 'spawn ENOENT' },
      ],
      now,
    );
    await reportToolServers(
      redis,
      prefix,
      'w2',
      [
        { name: 'fs', state: 'connected', tools: 4 },
        { name: 'tracker', state: 'connecting', tools: 0 },
      ],
      now,
    );
    await reportToolServers(redis, prefix, 'w-old', [{ name: 'fs', state: 'down', tools: 0 }], now - 120_000);
    expect(await toolServerProblems(redis, prefix, now)).toEqual(['mcp server tracker: not connected on 2 worker(s) (spawn ENOENT)']);
    expect(await redis.hkeys(`${prefix}:mcp:workers`)).toEqual(expect.arrayContaining(['w1', 'w2']));
    expect(await redis.hexists(`${prefix}:mcp:workers`, 'w-old')).toBe(0);
    await forgetToolServers(redis, prefix, 'w1');
    await forgetToolServers(redis, prefix, 'w2');
    expect(await toolServerProblems(redis, prefix, now)).toEqual([]);
  });
});
