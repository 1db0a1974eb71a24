import { randomUUID } from 'node:crypto';
import { getEncoding } from 'js-tiktoken';
import { Redis } from 'ioredis';
import { SessionKeys } from '../src/queue/keys.js';
import { MemoryStore } from '../src/memory/store.js';
import { memoryMessage } from '../src/memory/prompt.js';
import { createMemoryTools } from '../src/memory/tools.js';
import { toModelTools } from '../src/tools/index.js';
import { percentile } from './stats.js';

const encoding = getEncoding('o200k_base');
const tokens = (value: unknown) => encoding.encode(typeof value === 'string' ? value : JSON.stringify(value)).length;

const TOPICS = ['build server', 'staging host', 'favourite editor', 'time zone', 'manager', 'team', 'on-call week', 'VPN', 'laptop', 'language'];

/**
 * Memory's cost with 500 entries for the asker (MEMORY_MAX_ENTRIES' default): the memory block
 * the first request carries (MEMORY_PROMPT_TOKENS=400) and the three tools' schemas, counted with
 * o200k_base; and recall's latency over those 500 entries against real Redis (the store's
 * HGETALLs, the ranking and the touch), 100 calls.
 */
export async function memoryCost(
  redisUrl: string,
  entries = 500,
): Promise<{ entries: number; block: number; tools: number; recallP50Ms: number; recallP95Ms: number }> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const prefix = `{bench-mem-${randomUUID().slice(0, 8)}}`;
  const keys = new SessionKeys(prefix, 'runs');
  try {
    const store = new MemoryStore(redis, keys, { maxEntries: entries });
    const who = { agent: 'default', owner: 'telegram:42' };
    for (let i = 0; i < entries; i++) {
      const topic = TOPICS[i % TOPICS.length]!;
      await store.remember(
        who,
        `Fact ${i}: the ${topic} of project ${Math.floor(i / TOPICS.length)} is ${topic.replace(/\s/g, '-')}-${i}, noted on a call.`,
        'said',
      );
    }
    const block = await memoryMessage({ store }, { person: who }, 'deploy the release to my build server please', 400, 'Ada');
    const memoryTools = createMemoryTools({ store }, { person: who }, { provenance: () => 'said', onPending: async () => undefined });
    const recall = memoryTools.find((t) => t.name === 'recall')!;
    const samples: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t0 = performance.now();
      await recall.execute({ query: `the ${TOPICS[i % TOPICS.length]} of project ${i % 50}` }, { signal: new AbortController().signal });
      samples.push(performance.now() - t0);
    }
    return {
      entries,
      block: tokens(String(block?.content ?? '')),
      tools: tokens(toModelTools(memoryTools)),
      recallP50Ms: Math.round(percentile(samples, 50) * 10) / 10,
      recallP95Ms: Math.round(percentile(samples, 95) * 10) / 10,
    };
  } finally {
    const found = await redis.keys(`${prefix}*`);
    if (found.length > 0) await redis.del(...found);
    redis.disconnect();
  }
}
