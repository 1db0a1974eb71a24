import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIEmbedder } from '../../src/memory/embeddings.js';
import { memoryMessage } from '../../src/memory/prompt.js';
import { searchMemory } from '../../src/memory/search.js';
import { rankEntries } from '../../src/memory/rank.js';
import { MemoryStore } from '../../src/memory/store.js';
import { createMemoryTools } from '../../src/memory/tools.js';
import { SessionKeys } from '../../src/queue/keys.js';
import { bagOfWords, startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

/** Words that mean the same to this fake model: they land in one bucket, so their vectors agree. */
const SYNONYMS: Record<string, string> = { machine: 'server', box: 'server', host: 'server', ship: 'deploy', release: 'deploy' };
const meaning = (text: string) => bagOfWords(text.replace(/[a-z]+/gi, (w) => SYNONYMS[w.toLowerCase()] ?? w));

const redis = testRedis();
const prefix = uniquePrefix('memory-embed');
const keys = new SessionKeys(prefix, 'runs');
let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI({ embed: meaning });
});
afterAll(async () => {
  await fake.close();
  await dropPrefix(redis, prefix);
  redis.disconnect();
});

describe('EMBEDDINGS_MODEL: recall by meaning as well as by words', () => {
  it('an entry that shares no word with the question is found through its embedding (the real openai client against the fake /embeddings)', async () => {
    const store = new MemoryStore(redis, keys, { maxEntries: 50 });
    const person = { agent: 'default', owner: 'telegram:1' };
    const embedder = openAIEmbedder({ apiKey: 'k', baseURL: fake.baseURL, model: 'embed-small', timeoutMs: 5_000 });
    const tools = createMemoryTools({ store, embedder }, { person }, { provenance: () => 'said', onPending: async () => undefined });
    const remember = tools.find((t) => t.name === 'remember')!;
    const signal = new AbortController().signal;
    for (const text of ['Prefers tea over coffee', 'Lives in Lyon', 'Build machine is atlas-7', 'Birthday in May'])
      await remember.execute({ text }, { signal });
    expect(fake.embeddingRequests.map((r) => r.model)).toEqual(['embed-small', 'embed-small', 'embed-small', 'embed-small']);
    expect((await store.vectors(person)).size).toBe(4);

    const question = 'which server should I deploy to?';
    // By its words alone the entry matches nothing in the question.
    const lexical = rankEntries(await store.list(person), question);
    expect(lexical.find((r) => r.entry.text === 'Build machine is atlas-7')!.score).toBe(0);
    const hybrid = await searchMemory({ store, embedder }, { person }, question);
    expect(hybrid[0]!.text).toBe('Build machine is atlas-7');
    // A block with room for one entry carries the one the question means.
    const block = String((await memoryMessage({ store, embedder }, { person }, question, 90, 'Ada'))!.content);
    expect(block).toContain('Build machine is atlas-7');
    expect(block).not.toContain('Lyon');
  });

  it('an embeddings endpoint that fails leaves recall to the words, and remembering still works', async () => {
    const store = new MemoryStore(redis, keys, { maxEntries: 50 });
    const person = { agent: 'default', owner: 'telegram:2' };
    const broken = openAIEmbedder({ apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1', model: 'embed-small', timeoutMs: 1_000 });
    const warnings: unknown[] = [];
    const log = { warn: (o: unknown) => void warnings.push(o) } as never;
    const tools = createMemoryTools({ store, embedder: broken, log }, { person }, { provenance: () => 'said', onPending: async () => undefined });
    expect(await tools.find((t) => t.name === 'remember')!.execute({ text: 'Lives in Lyon' }, { signal: new AbortController().signal })).toMatch(/^Remembered/);
    const found = await searchMemory({ store, embedder: broken, log }, { person }, 'where does she live? Lyon');
    expect(found.map((e) => e.text)).toEqual(['Lives in Lyon']);
    expect(warnings.length).toBe(2);
  }, 20_000);
});
