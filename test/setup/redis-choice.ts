// Which Redis `npm test` uses: the pure decision, kept apart from the probing and spawning in
// ./redis.global.ts so a unit test can cover every branch.

/** Where the suite looks for a shared Redis when TEST_REDIS_URL is unset. */
export const DEFAULT_PROBE = '127.0.0.1:6379';

export const HOW_TO_GET_REDIS =
  'npm test needs Redis: nothing answers on {probe} and there is no redis-server on the PATH; install it (Debian/Ubuntu: apt install redis-server; macOS: brew install redis), or run `docker compose up -d redis`, or set TEST_REDIS_URL';

export type RedisChoice =
  /** TEST_REDIS_URL was set: use it as given. */
  | { kind: 'given'; url: string }
  /** Something answers at the probe address: share it (tests use key prefixes of their own). */
  | { kind: 'shared'; url: string }
  /** Nothing answers, redis-server is on the PATH: start a private one for this run. */
  | { kind: 'private' }
  /** Nothing answers and there is nothing to start: say how to get Redis, exit non-zero. */
  | { kind: 'missing'; message: string };

export interface RedisFacts {
  /** process.env.TEST_REDIS_URL */
  testRedisUrl: string | undefined;
  /** host:port that was probed */
  probe: string;
  /** whether the probe answered PING (not asked when testRedisUrl is set) */
  probeAnswers: () => Promise<boolean> | boolean;
  /** whether `redis-server --version` runs */
  hasRedisServer: () => Promise<boolean> | boolean;
}

/** host:port from SWITCHBOARD_TEST_REDIS_PROBE, else 127.0.0.1:6379. */
export function probeAddress(env: Record<string, string | undefined>): string {
  const v = env.SWITCHBOARD_TEST_REDIS_PROBE?.trim();
  return v ? v.replace(/^redis:\/\//, '') : DEFAULT_PROBE;
}

export async function chooseRedis(facts: RedisFacts): Promise<RedisChoice> {
  if (facts.testRedisUrl) return { kind: 'given', url: facts.testRedisUrl };
  if (await facts.probeAnswers()) return { kind: 'shared', url: `redis://${facts.probe}` };
  if (await facts.hasRedisServer()) return { kind: 'private' };
  return { kind: 'missing', message: HOW_TO_GET_REDIS.replace('{probe}', facts.probe) };
}
