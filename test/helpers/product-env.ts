import { REDIS_URL } from './redis.js';

/**
 * The environment of a gateway or worker process a test or measurement starts: its own key
 * prefix and workspace root, the fake model, anyone may talk to it (access control has its own
 * tests), no per-person rate limit, a free port, info logs (the tests read "worker ready"), the status message at once.
 */
export function productEnv(o: { prefix: string; modelUrl: string; root: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL,
    QUEUE_PREFIX: o.prefix,
    OPENAI_BASE_URL: o.modelUrl,
    OPENAI_API_KEY: 'test-key-not-secret',
    AGENT_MODEL: 'fake-model',
    WORKSPACE_ROOT: o.root,
    DM_POLICY: 'open',
    USER_RATE_LIMIT: '0',
    PORT: '0',
    LOG_LEVEL: 'info',
    // The scripted model answers in milliseconds: the status message the tests look at is posted at its first line.
    STATUS_AFTER_MS: '0',
    // Memory adds three tools to every request; the tests that are about it (test/memory) turn it on.
    MEMORY: 'off',
    ...extra,
  };
}
