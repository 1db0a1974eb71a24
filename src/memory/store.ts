import type { Redis } from 'ioredis';
import type { RedisKeys } from '../queue/keys.js';
import { defineScript, runScript } from '../queue/redis-scripts.js';
import { entryId, normaliseText, type MemoryEntry, type Provenance, type StoredEntry } from './entry.js';

/** Whose memory, in which agent's namespace: a person (`person` id) or a channel (`channel:<platform>:<id>`). */
export interface MemoryOwner {
  agent: string;
  owner: string;
}

// → {1, evicted} added · {0, existing JSON} the same text is there already. Over `max` entries the
// least recently used ones go (never the one just added).
const ADD = defineScript({
  name: 'sbMemoryAdd',
  keys: ['memory', 'used', 'namespaces', 'vectors'],
  args: ['id', 'entry', 'now', 'max', 'agent'],
  lua: `
local existing = redis.call('HGET', KEYS[1], ARGV[1])
if existing then return {0, existing} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[5])
local evicted = 0
local max = tonumber(ARGV[4])
if redis.call('HLEN', KEYS[1]) > max then
  local used = redis.call('HGETALL', KEYS[2])
  local order = {}
  for i = 1, #used, 2 do
    if used[i] ~= ARGV[1] then order[#order + 1] = {used[i], tonumber(used[i + 1])} end
  end
  table.sort(order, function(a, b) return a[2] < b[2] end)
  local i = 1
  while redis.call('HLEN', KEYS[1]) > max and order[i] do
    redis.call('HDEL', KEYS[1], order[i][1])
    redis.call('HDEL', KEYS[2], order[i][1])
    redis.call('HDEL', KEYS[4], order[i][1])
    evicted = evicted + 1
    i = i + 1
  end
end
return {1, evicted}
`,
  decode: (r, unexpected): { added: true; evicted: number } | { added: false; existing: string } => {
    if (!Array.isArray(r)) return unexpected();
    if (r[0] === 1) return { added: true, evicted: Number(r[1]) };
    if (r[0] === 0) return { added: false, existing: String(r[1]) };
    return unexpected();
  },
});

// Replaces an entry only while it is there (a Keep racing a forget never brings it back). → 1 · 0 gone
const REPLACE = defineScript({
  name: 'sbMemoryReplace',
  keys: ['memory'],
  args: ['id', 'entry'],
  lua: `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`,
  decode: (r, unexpected) => (r === 1 ? true : r === 0 ? false : unexpected()),
});

// Marks entries used now, only those still there. → how many
const TOUCH = defineScript({
  name: 'sbMemoryTouch',
  keys: ['memory', 'used'],
  args: ['now'],
  lists: ['ids'],
  lua: `
local n = 0
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[1])
    n = n + 1
  end
end
return n
`,
  decode: (r, unexpected) => (typeof r === 'number' ? r : unexpected()),
});

// An embedding arrives after its entry was written: it is kept only if the entry still is.
const SET_VECTOR = defineScript({
  name: 'sbMemoryVector',
  keys: ['memory', 'vectors'],
  args: ['id', 'vector'],
  lua: `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
`,
  decode: (r, unexpected) => (r === 1 ? true : r === 0 ? false : unexpected()),
});

export interface MemoryLimits {
  /** MEMORY_MAX_ENTRIES: per owner and agent; over it the least recently used entries go. */
  maxEntries: number;
  /** MEMORY_RETENTION_DAYS: entries unused this long are dropped (undefined: kept). */
  retentionDays?: number;
}

export type Remembered = { kind: 'added'; entry: MemoryEntry; evicted: number } | { kind: 'known'; entry: MemoryEntry };

/**
 * Memory in Redis: one hash of entries per owner and agent, beside a hash of when each was last
 * used. Every write is one script or one command, so two workers never half-write an entry.
 */
export class MemoryStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    readonly limits: MemoryLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Remembers `text`; the same text again is the entry already there (a pending one becomes kept when the person said it themselves). */
  async remember(who: MemoryOwner, text: string, provenance: Provenance): Promise<Remembered> {
    const body = normaliseText(text);
    const at = this.now();
    const entry: MemoryEntry = { id: entryId(body), text: body, createdAt: at, provenance, state: provenance === 'said' ? 'kept' : 'pending' };
    const result = await runScript(this.redis, ADD, {
      keys: { memory: this.key(who), used: this.usedKey(who), namespaces: this.keys.memoryNamespaces(who.owner), vectors: this.vectorsKey(who) },
      args: { id: entry.id, entry: JSON.stringify(entry), now: at, max: this.limits.maxEntries, agent: who.agent },
    });
    if (result.added) return { kind: 'added', entry, evicted: result.evicted };
    const known = JSON.parse(result.existing) as MemoryEntry;
    if (known.state === 'pending' && provenance === 'said') {
      const kept: MemoryEntry = { ...known, provenance: 'said', state: 'kept' };
      await this.replace(who, kept);
      return { kind: 'known', entry: kept };
    }
    return { kind: 'known', entry: known };
  }

  /** Every entry of the owner, newest first; entries unused past MEMORY_RETENTION_DAYS are dropped here. */
  async list(who: MemoryOwner): Promise<StoredEntry[]> {
    const [entries, used] = await Promise.all([this.redis.hgetall(this.key(who)), this.redis.hgetall(this.usedKey(who))]);
    const cutoff = this.limits.retentionDays === undefined ? -Infinity : this.now() - this.limits.retentionDays * 86_400_000;
    const out: StoredEntry[] = [];
    const stale: string[] = [];
    for (const [id, raw] of Object.entries(entries)) {
      const entry = JSON.parse(raw) as MemoryEntry;
      const usedAt = Number(used[id] ?? entry.createdAt);
      if (usedAt < cutoff) stale.push(id);
      else out.push({ ...entry, usedAt });
    }
    if (stale.length > 0)
      await this.redis
        .multi()
        .hdel(this.key(who), ...stale)
        .hdel(this.usedKey(who), ...stale)
        .hdel(this.vectorsKey(who), ...stale)
        .exec();
    return out.sort((a, b) => b.createdAt - a.createdAt || a.id.localeCompare(b.id));
  }

  async get(who: MemoryOwner, id: string): Promise<StoredEntry | undefined> {
    return (await this.list(who)).find((e) => e.id === id);
  }

  /** The person's Keep: a pending entry becomes one the model may use. False when it is gone. */
  async keep(who: MemoryOwner, id: string): Promise<boolean> {
    const entry = await this.get(who, id);
    if (!entry) return false;
    const { usedAt: _usedAt, ...rest } = entry;
    return this.replace(who, { ...rest, state: 'kept' });
  }

  /** Forgets one entry. False when it was not there. */
  async forget(who: MemoryOwner, id: string): Promise<boolean> {
    const [[, removed]] = (await this.redis.multi().hdel(this.key(who), id).hdel(this.usedKey(who), id).hdel(this.vectorsKey(who), id).exec()) as [
      [unknown, number],
      ...unknown[],
    ];
    return removed === 1;
  }

  /** Forgets everything of the owner in this agent's namespace; returns how many entries there were. */
  async forgetAll(who: MemoryOwner): Promise<number> {
    const [[, n]] = (await this.redis
      .multi()
      .hlen(this.key(who))
      .del(this.key(who), this.usedKey(who), this.vectorsKey(who))
      .srem(this.keys.memoryNamespaces(who.owner), who.agent)
      .exec()) as [[unknown, number], ...unknown[]];
    return n;
  }

  async touch(who: MemoryOwner, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await runScript(this.redis, TOUCH, { keys: { memory: this.key(who), used: this.usedKey(who) }, args: { now: this.now(), ids } });
  }

  /** Stores an entry's embedding, only while the entry is there. */
  async setVector(who: MemoryOwner, id: string, vector: readonly number[]): Promise<void> {
    const rounded = vector.map((x) => Math.round(x * 1e5) / 1e5);
    await runScript(this.redis, SET_VECTOR, { keys: { memory: this.key(who), vectors: this.vectorsKey(who) }, args: { id, vector: JSON.stringify(rounded) } });
  }

  /** The embeddings of the owner's entries (those that have one). */
  async vectors(who: MemoryOwner): Promise<Map<string, number[]>> {
    const raw = await this.redis.hgetall(this.vectorsKey(who));
    return new Map(Object.entries(raw).map(([id, v]) => [id, JSON.parse(v) as number[]]));
  }

  /** The agents' namespaces in which an owner has (or had) memory. */
  async namespaces(owner: string): Promise<string[]> {
    return (await this.redis.smembers(this.keys.memoryNamespaces(owner))).sort();
  }

  private async replace(who: MemoryOwner, entry: MemoryEntry): Promise<boolean> {
    return runScript(this.redis, REPLACE, { keys: { memory: this.key(who) }, args: { id: entry.id, entry: JSON.stringify(entry) } });
  }

  private key(who: MemoryOwner): string {
    return this.keys.memory(who.agent, who.owner);
  }

  private vectorsKey(who: MemoryOwner): string {
    return this.keys.memoryVectors(who.agent, who.owner);
  }

  private usedKey(who: MemoryOwner): string {
    return this.keys.memoryUsed(who.agent, who.owner);
  }
}
