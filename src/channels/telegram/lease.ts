import type { Redis } from 'ioredis';

// KEYS: lease   ARGV: holder, ttl ms. Takes a free lease or extends our own; 1 when held.
const ACQUIRE = `
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
  return 1
end
return 0
`;

// KEYS: lease   ARGV: holder. Releases the lease only if it is still ours.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * One long-polling gateway per bot token among the gateways sharing a Redis: the poller holds
 * this lease (a key with a TTL, renewed while it polls). A second gateway, or a new process
 * overlapping an old one in a rolling deploy, waits on standby instead of fighting over
 * getUpdates (Telegram answers the loser with 409 Conflict); it takes over when the holder
 * releases the lease on shutdown or stops renewing it (crash).
 */
export class PollingLease {
  constructor(
    private readonly redis: Redis,
    readonly key: string,
    readonly holder: string,
    readonly ttlMs: number,
  ) {}

  /** Takes the lease when free, or extends ours. False when another gateway holds it. */
  async acquire(): Promise<boolean> {
    return (await this.redis.eval(ACQUIRE, 1, this.key, this.holder, this.ttlMs)) === 1;
  }

  async release(): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.key, this.holder);
  }

  /** Who holds the lease now (for readiness). */
  async currentHolder(): Promise<string | null> {
    return this.redis.get(this.key);
  }
}
