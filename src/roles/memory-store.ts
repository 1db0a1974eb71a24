import type { Redis } from 'ioredis';
import type { Config } from '../config/config.js';
import { MemoryStore } from '../memory/store.js';
import type { RedisKeys } from '../queue/keys.js';

/** The memory store as MEMORY_MAX_ENTRIES and MEMORY_RETENTION_DAYS say (every process builds the same one). */
export function memoryStoreOf(config: Config, redis: Redis, keys: RedisKeys): MemoryStore {
  const { maxEntries, retentionDays } = config.memory;
  return new MemoryStore(redis, keys, { maxEntries, ...(retentionDays !== undefined && { retentionDays }) });
}
