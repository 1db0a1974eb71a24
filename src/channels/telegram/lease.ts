import type { Redis } from 'ioredis';
import { byCode, defineScript, runScript } from '../../queue/redis-scripts.js';

// Takes a free lease or extends our own.
const ACQUIRE = defineScript({
  name: 'sbLeaseAcquire',
  keys: ['lease'],
  args: ['holder', 'ttlMs'],
  lua: `
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
  return 1
end
return 0
`,
  decode: byCode({ 1: 'held', 0: 'taken' }),
});

// Releases the lease only if it is still ours.
const RELEASE = defineScript({
  name: 'sbLeaseRelease',
  keys: ['lease'],
  args: ['holder'],
  lua: `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`,
  decode: byCode({ 1: 'released', 0: 'not_ours' }),
});

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
    return (await runScript(this.redis, ACQUIRE, { keys: { lease: this.key }, args: { holder: this.holder, ttlMs: this.ttlMs } })) === 'held';
  }

  async release(): Promise<void> {
    await runScript(this.redis, RELEASE, { keys: { lease: this.key }, args: { holder: this.holder } });
  }

  /** Who holds the lease now (for readiness). */
  async currentHolder(): Promise<string | null> {
    return this.redis.get(this.key);
  }
}
