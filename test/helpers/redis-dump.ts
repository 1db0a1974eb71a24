import type { Redis } from 'ioredis';

export interface DumpedKey {
  key: string;
  type: string;
  /** Every field name, member and value the key holds, as text. */
  texts: string[];
}

/** Every key under `prefix` with all it holds, whatever its type (string, list, hash, set, zset, stream). */
export async function dumpPrefix(redis: Redis, prefix: string): Promise<DumpedKey[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix.replace(/[{}[\]*?\\]/g, '\\$&')}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const out: DumpedKey[] = [];
  for (const key of [...new Set(keys)].sort()) {
    const type = await redis.type(key);
    out.push({ key, type, texts: await textsOf(redis, key, type) });
  }
  return out;
}

async function textsOf(redis: Redis, key: string, type: string): Promise<string[]> {
  switch (type) {
    case 'string':
      return [(await redis.get(key)) ?? ''];
    case 'list':
      return redis.lrange(key, 0, -1);
    case 'hash':
      return Object.entries(await redis.hgetall(key)).flat();
    case 'set':
      return redis.smembers(key);
    case 'zset':
      return redis.zrange(key, '0', '-1', 'WITHSCORES');
    case 'stream':
      return (await redis.xrange(key, '-', '+')).flatMap(([id, fields]) => [id, ...fields]);
    case 'none':
      return []; // expired between SCAN and TYPE
    default:
      throw new Error(`dumpPrefix: key ${key} has a type this dump does not read: ${type}`);
  }
}

/** The keys (with their type) holding `needle` anywhere, in a name or a value. */
export function keysHolding(dump: readonly DumpedKey[], needle: string): string[] {
  return dump.filter((d) => d.key.includes(needle) || d.texts.some((t) => t.includes(needle))).map((d) => `${d.type} ${d.key}`);
}
