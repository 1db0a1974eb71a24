import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWorkers } from '../../src/queue/worker-heartbeat.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { spawnNode, spawnWorker, waitFor, type Spawned } from '../helpers/processes.js';
import { dropPrefix, REDIS_URL, uniquePrefix } from '../helpers/redis.js';

/** The same Redis server, another database: what CLIENT LIST (BullMQ's worker count) cannot tell apart. */
const db = (n: number) => `${REDIS_URL.replace(/\/\d+$/, '')}/${n}`;

describe('workers are counted per queue, not per Redis server', () => {
  let fake: FakeOpenAI;
  let workspace: string;
  let worker: Spawned;
  const prefix = uniquePrefix('wcount');
  const redis12 = new Redis(db(12), { maxRetriesPerRequest: null });
  const redis9 = new Redis(db(9), { maxRetriesPerRequest: null });
  const spawned: Spawned[] = [];
  const env = () => ({
    QUEUE_PREFIX: prefix,
    OPENAI_BASE_URL: fake.baseURL,
    OPENAI_API_KEY: 'test-key-not-secret',
    AGENT_MODEL: 'fake-model',
    WORKSPACE_ROOT: workspace,
    LOG_LEVEL: 'warn',
  });

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.setHandler(() => ({ content: 'hello back' }));
    workspace = await mkdtemp(join(tmpdir(), 'sb-wcount-'));
    // Another Switchboard on database 12 of the same server, with the same prefix even.
    worker = await spawnWorker({ ...env(), REDIS_URL: db(12), LOG_LEVEL: 'info' });
    spawned.push(worker);
  });
  afterAll(async () => {
    for (const p of spawned) p.kill('SIGKILL');
    await Promise.all(spawned.map((p) => p.exited));
    for (const r of [redis12, redis9]) {
      await dropPrefix(r, prefix);
      r.disconnect();
    }
    await fake.close();
    await rm(workspace, { recursive: true, force: true });
  });

  it('a worker counts for its own database and prefix only', async () => {
    expect(await countWorkers(redis12, prefix)).toBe(1);
    expect(await countWorkers(redis9, prefix)).toBe(0);
    expect(await countWorkers(redis12, uniquePrefix('other'))).toBe(0);
  });

  it('the chat on another database starts its own worker and is answered (it used to wait forever)', async () => {
    const chat = spawnNode('src/cli/chat.ts', ['--session', 'db9', 'hello'], { ...env(), REDIS_URL: db(9) });
    spawned.push(chat);
    expect(await chat.exited).toBe(0);
    expect(chat.stderr()).toContain('no worker is running: starting one in this process');
    expect(chat.stdout()).toContain('hello back');
  }, 40_000);

  it('with --no-worker and nobody listening, the chat says once what to check, and keeps waiting', async () => {
    const chat = spawnNode('src/cli/chat.ts', ['--no-worker', '--session', 'alone', 'anyone there?'], {
      ...env(),
      REDIS_URL: db(9),
      SWITCHBOARD_CHAT_UNTAKEN_MS: '1000',
    });
    spawned.push(chat);
    await waitFor('the notice', () => chat.stderr().includes('No worker has taken this message after 1 s'), 20_000);
    expect(chat.stderr()).toContain(`QUEUE_PREFIX=${prefix}`);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(chat.child.exitCode).toBeNull();
    expect(chat.stderr().match(/No worker has taken/g)).toHaveLength(1);
  }, 40_000);

  it('a message a worker took is not called untaken, however long the run', async () => {
    fake.setHandler(() => ({ content: 'slow answer', delayMs: 2_500 }));
    const chat = spawnNode('src/cli/chat.ts', ['--no-worker', '--session', 'taken', 'take your time'], {
      ...env(),
      REDIS_URL: db(12),
      SWITCHBOARD_CHAT_UNTAKEN_MS: '1000',
    });
    spawned.push(chat);
    expect(await chat.exited).toBe(0);
    expect(chat.stdout()).toContain('slow answer');
    expect(chat.stderr()).not.toContain('No worker has taken');
  }, 40_000);

  it('a worker that stops leaves the count at once', async () => {
    worker.kill('SIGTERM');
    await worker.exited;
    expect(await countWorkers(redis12, prefix)).toBe(0);
  });
});
