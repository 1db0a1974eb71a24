import { freePort as closedPort } from '../helpers/ports.js';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureRedis, RedisUnavailableError, type RedisHandle } from '../../src/cli/redis-bootstrap.js';
import { createLogger } from '../../src/log.js';
import { REDIS_URL } from '../helpers/redis.js';

const log = createLogger('silent');

/** PING's answer, or the connection error's message. */
async function ping(url: string): Promise<string> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1_000, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.ping();
  } catch (err) {
    return `error: ${(err as Error).message}`;
  } finally {
    client.disconnect();
  }
}

const portOf = (url: string) => Number(new URL(url).port);

describe('ensureRedis', () => {
  const handles: RedisHandle[] = [];
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it('an answering URL is used as is, with no child', async () => {
    for (const explicit of [true, false]) {
      const h = await ensureRedis(REDIS_URL, explicit, true, log);
      handles.push(h);
      expect(h.url).toBe(REDIS_URL);
      expect(h.child).toBeUndefined();
      await h.stop();
      // stop() of a shared Redis leaves it alone.
      expect(await ping(REDIS_URL)).toBe('PONG');
    }
  });

  it('an explicit URL that does not answer is an error, even when a private server is allowed', async () => {
    const port = await closedPort();
    const url = `redis://127.0.0.1:${port}`;
    const attempt = ensureRedis(url, true, true, log);
    await expect(attempt).rejects.toBeInstanceOf(RedisUnavailableError);
    await expect(attempt).rejects.toThrow(`Redis does not answer at REDIS_URL (${url}): start it or fix REDIS_URL`);
  });

  it('the error for an explicit URL hides its password', async () => {
    const port = await closedPort();
    const attempt = ensureRedis(`redis://user:s3cret-pw@127.0.0.1:${port}`, true, false, log);
    await expect(attempt).rejects.toThrow(/Redis does not answer at REDIS_URL \(redis:\/\/user:\*\*\*@127\.0\.0\.1:\d+\)/);
    await expect(attempt).rejects.not.toThrow(/s3cret-pw/);
  });

  it('without an explicit URL, and allowed, it starts a private redis-server and stops it', async () => {
    const port = await closedPort();
    const url = `redis://127.0.0.1:${port}`;
    const h = await ensureRedis(url, false, true, log);
    handles.push(h);
    const child = h.child;
    expect(child).toBeDefined();
    expect(child!.pid).toBeGreaterThan(0);
    expect(h.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(portOf(h.url)).not.toBe(port);
    expect(await ping(h.url)).toBe('PONG');
    // It is a server of its own, not the shared one.
    expect(portOf(h.url)).not.toBe(portOf(REDIS_URL));

    const exited = new Promise<void>((resolve) => (child!.exitCode !== null || child!.signalCode !== null ? resolve() : child!.once('exit', () => resolve())));
    await h.stop();
    await exited;
    expect(child!.exitCode !== null || child!.signalCode !== null).toBe(true);
    expect(await ping(h.url)).toMatch(/^error: /);
    // Stopping twice is harmless.
    await h.stop();
  });

  it('without an explicit URL and not allowed to start one, it says how to get Redis', async () => {
    const port = await closedPort();
    const url = `redis://127.0.0.1:${port}`;
    const attempt = ensureRedis(url, false, false, log);
    await expect(attempt).rejects.toBeInstanceOf(RedisUnavailableError);
    await expect(attempt).rejects.toThrow(`Redis does not answer at ${url}`);
    await expect(attempt).rejects.toThrow('apt install redis-server');
    await expect(attempt).rejects.toThrow('docker compose up -d redis');
    await expect(attempt).rejects.toThrow('set REDIS_URL');
  });
});
