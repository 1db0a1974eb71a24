import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import type { Logger } from '../log.js';

export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
}

export interface RedisHandle {
  url: string;
  /** The private redis-server this process started, if any. */
  child?: ChildProcess;
  stop(): Promise<void>;
}

const HOW_TO_GET_REDIS =
  'install it (Debian/Ubuntu: apt install redis-server; macOS: brew install redis) or run `docker compose up -d redis`, or set REDIS_URL';

async function answers(url: string, timeoutMs = 1_000): Promise<boolean> {
  // A cluster's seed node answers PING like any Redis.
  const plain = url.replace('+cluster', '');
  const client = new Redis(plain, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: timeoutMs, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Finds the Redis to use. An explicit REDIS_URL must answer. Without one, the default
 * 127.0.0.1:6379 is used when it answers; else, when `allowPrivate`, a private redis-server
 * child (from PATH, nothing kept on disk) is started on a free port and stopped with us.
 */
export async function ensureRedis(url: string, explicit: boolean, allowPrivate: boolean, log: Logger): Promise<RedisHandle> {
  if (await answers(url)) return { url, stop: async () => {} };
  if (explicit) throw new RedisUnavailableError(`Redis does not answer at REDIS_URL (${redact(url)}): start it or fix REDIS_URL`);
  const hasServer = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!allowPrivate || !hasServer) {
    throw new RedisUnavailableError(`Redis does not answer at ${url}: ${HOW_TO_GET_REDIS}`);
  }
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const privateUrl = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 50 && !(await answers(privateUrl, 200)); i++) await new Promise((r) => setTimeout(r, 100));
  if (!(await answers(privateUrl))) {
    child.kill('SIGKILL');
    throw new RedisUnavailableError(`a private redis-server did not start on port ${port}: ${HOW_TO_GET_REDIS}`);
  }
  // A private server must never outlive us, even when we crash.
  process.once('exit', () => child.kill('SIGTERM'));
  log.warn(
    { port, pid: child.pid },
    `nothing answered at ${url}; started a private redis-server on 127.0.0.1:${port} (data is lost when this process stops; other processes cannot share it)`,
  );
  return {
    url: privateUrl,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The URL with its password masked, for messages. */
export function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}
