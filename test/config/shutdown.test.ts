import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';
import { PROCESS_READY_MS, spawnNode, waitFor, type Spawned } from '../helpers/processes.js';
import { dropPrefix, REDIS_URL, testRedis, uniquePrefix } from '../helpers/redis.js';

const started: Spawned[] = [];
const prefixes: string[] = [];

afterAll(async () => {
  for (const p of started) p.kill('SIGKILL');
  const redis = testRedis();
  for (const prefix of prefixes) await dropPrefix(redis, prefix);
  redis.disconnect();
});

/**
 * The `msg` of each JSON log line, in the order they were logged: by their `time` (a stable
 * sort), since a pipe the test drains slowly under load can take a later write first.
 */
const messages = (p: Spawned) =>
  p
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; time: number })
    .sort((a, b) => a.time - b.time)
    .map((l) => l.msg);

describe('stopping the real entry point', () => {
  it.each([['SIGTERM'], ['SIGINT']] as const)(
    '%s: the gateway drains before it closes, and the process exits 0',
    async (signal) => {
      const prefix = uniquePrefix('shutdown');
      prefixes.push(prefix);
      const port = await freePort();
      const p = spawnNode('src/cli/main.ts', ['all'], {
        REDIS_URL,
        QUEUE_PREFIX: prefix,
        PORT: String(port),
        OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
        SHUTDOWN_GRACE_MS: '2000',
        LOG_LEVEL: 'info',
      });
      started.push(p);
      await waitFor('ready', () => messages(p).includes('ready') || (p.child.exitCode !== null && Promise.reject(new Error(p.stderr()))), PROCESS_READY_MS);
      p.kill(signal);
      expect(await p.exited).toBe(0);
      expect(messages(p).slice(-3)).toEqual([
        'stopping: taking no new work, waiting for active runs',
        'draining: refusing new webhook events, stopping the channels',
        'stopped',
      ]);
      expect(p.stderr()).toContain('"graceMs":2000');
    },
    90_000,
  );
});
