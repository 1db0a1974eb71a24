import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Shares the Redis on 127.0.0.1:6379, or starts a private redis-server for the run (see the file).
    globalSetup: ['test/setup/redis.global.ts'],
    // Integration tests start worker processes and share one Redis; two files at a time fits 2 cores.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    // A hook that starts worker processes waits for each to be ready (up to PROCESS_READY_MS in test/helpers/processes.ts).
    hookTimeout: 150_000,
  },
});
