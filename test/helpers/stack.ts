import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { parseEnv } from '../../src/config/load.js';
import { deriveConfig, type Config } from '../../src/config/config.js';
import { createLogger, type Logger } from '../../src/log.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { startGatewayRole } from '../../src/roles/gateway.js';
import { startWorkerRole, type Role } from '../../src/roles/worker.js';
import { SessionKeys } from '../../src/queue/keys.js';
import { createRunQueue, type RunQueue } from '../../src/queue/run-queue.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { dropPrefix, REDIS_URL, testRedis, uniquePrefix } from './redis.js';

export interface Stack {
  config: Config;
  /** The registry both roles count into. */
  metrics: Metrics;
  fake: FakeOpenAI;
  gateway: Awaited<ReturnType<typeof startGatewayRole>>;
  worker: Role;
  /** http://127.0.0.1:PORT of the gateway's HTTP server. */
  baseUrl: string;
  redis: Redis;
  keys: SessionKeys;
  queue: RunQueue;
  workspaceRoot: string;
  close(): Promise<void>;
}

/**
 * The real gateway and worker roles in this process, against real Redis (a prefix of the
 * test's own), a fake model, and whatever platform fakes `env` points at. LOG_LEVEL=debug
 * TEST_LOG=1 shows the logs; `options.log` takes them instead (a test that reads them).
 */
export const STACK_ADMIN_TOKEN = 'stack-admin-token-for-tests';

/** GET /readyz with the stack's admin token: the details (channels, MCP servers), not the bare status. */
export function readyz(stack: Pick<Stack, 'baseUrl' | 'config'>): Promise<Response> {
  return fetch(`${stack.baseUrl}/readyz`, { headers: { authorization: `Bearer ${stack.config.adminToken ?? ''}` } });
}

export async function startStack(name: string, env: Record<string, string>, options: { log?: Logger } = {}): Promise<Stack> {
  const fake = await startFakeOpenAI();
  const workspaceRoot = await mkdtemp(join(tmpdir(), `sb-${name}-`));
  const redisUrl = env.REDIS_URL ?? REDIS_URL;
  const config = deriveConfig(
    parseEnv({
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: uniquePrefix(name),
      PORT: '0',
      OPENAI_BASE_URL: fake.baseURL,
      OPENAI_API_KEY: 'test-key-not-secret',
      AGENT_MODEL: 'fake-model',
      WORKSPACE_ROOT: workspaceRoot,
      LOCK_DURATION_MS: '5000',
      STALLED_INTERVAL_MS: '5000',
      // The scripted model answers in milliseconds: the status message the tests look at is posted at its first line.
      STATUS_AFTER_MS: '0',
      // Memory adds three tools to every request; the tests that are about it (test/memory) turn it on.
      MEMORY: 'off',
      // Pipeline tests talk as strangers; access control has its own tests (test/access).
      DM_POLICY: 'open',
      // /readyz details need a credential (readyz() below sends it).
      ADMIN_TOKEN: STACK_ADMIN_TOKEN,
      ...env,
    }),
  );
  const log = options.log ?? createLogger(process.env.TEST_LOG ? (process.env.LOG_LEVEL ?? 'debug') : 'silent');
  const metrics = new Metrics();
  const worker = await startWorkerRole(config, redisUrl, log.child({ role: 'worker' }), { metrics });
  const gateway = await startGatewayRole(config, redisUrl, log.child({ role: 'gateway' }), { metrics });
  const port = (gateway.server.address() as AddressInfo).port;
  const redis = env.REDIS_URL ? new Redis(env.REDIS_URL, { maxRetriesPerRequest: null }) : testRedis();
  const keys = new SessionKeys(config.queue.prefix, config.queue.name);
  const queue = createRunQueue(config.queue, redis, log);
  return {
    config,
    metrics,
    fake,
    gateway,
    worker,
    baseUrl: `http://127.0.0.1:${port}`,
    redis,
    keys,
    queue,
    workspaceRoot,
    async close() {
      await gateway.close();
      await worker.close(true);
      await queue.close();
      await dropPrefix(redis, config.queue.prefix);
      redis.disconnect();
      await fake.close();
      await rm(workspaceRoot, { recursive: true, force: true });
    },
  };
}
