import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseEnv } from '../../../src/config/load.js';
import { deriveConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { startGatewayRole } from '../../../src/roles/gateway.js';
import { startFakeDiscord } from '../../fakes/discord-server.js';
import { startFakeOpenAI } from '../../fakes/openai-server.js';
import { spawnWorker, waitFor, type Spawned } from '../../helpers/processes.js';
import { dropPrefix, REDIS_URL, testRedis, uniquePrefix } from '../../helpers/redis.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe('Discord with split roles', () => {
  it('a worker process with no gateway connection answers a slash command and a mention over REST', async () => {
    const fake = await startFakeDiscord();
    cleanup.push(() => fake.close());
    const model = await startFakeOpenAI();
    cleanup.push(() => model.close());
    model.setHandler((req) => ({ content: `from the worker: ${String(req.body.messages.at(-1).content)}` }));
    const workspaceRoot = await mkdtemp(join(tmpdir(), 'sb-dc-split-'));
    cleanup.push(() => rm(workspaceRoot, { recursive: true, force: true }));
    const prefix = uniquePrefix('dc-split');
    const redis = testRedis();
    cleanup.push(async () => {
      await dropPrefix(redis, prefix);
      redis.disconnect();
    });
    const env = {
      REDIS_URL,
      QUEUE_PREFIX: prefix,
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: 'test-key-not-secret',
      AGENT_MODEL: 'fake-model',
      WORKSPACE_ROOT: workspaceRoot,
      DM_POLICY: 'open',
      ...fake.env(),
    };

    const worker: Spawned = await spawnWorker(env);
    cleanup.push(async () => {
      worker.kill();
      await worker.exited;
    });
    const gateway = await startGatewayRole(deriveConfig(parseEnv({ ...env, PORT: '0' })), REDIS_URL, createLogger('silent'));
    cleanup.push(() => gateway.close());
    const channel = gateway.channels.find((c) => c.name === 'discord')!;
    await waitFor('the Discord gateway to be ready', () => channel.health().connected, 15_000);
    expect(fake.gateway.identifies).toHaveLength(1); // only the gateway connects; the worker does not

    const ix = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'hello from a slash command' });
    await waitFor('the slash answer', () => fake.messages.find((m) => m.id === ix.originalId)?.content.startsWith('from the worker'), 20_000);
    const asked = fake.userMessage({ channel: fake.ids.random, content: `<@${fake.ids.app}> hello from a mention` });
    await waitFor('the mention reply', () => fake.botMessages(fake.ids.random).length === 1, 20_000);

    expect(fake.messages.find((m) => m.id === ix.originalId)!.content).toBe('from the worker: hello from a slash command');
    expect(fake.botMessages(fake.ids.random)[0]).toMatchObject({
      content: 'from the worker: hello from a mention',
      message_reference: { message_id: asked.id },
    });
    expect(fake.gateway.identifies).toHaveLength(1);
  }, 60_000);
});
