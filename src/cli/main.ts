import { loadConfig, ConfigError } from '../config/load.js';
import { createLogger } from '../log.js';
import { ensureRedis, RedisUnavailableError } from './redis-bootstrap.js';
import { startGatewayRole, type GatewayRole } from '../roles/gateway.js';
import { startWorkerRole, type Role } from '../roles/worker.js';
import { Metrics } from '../metrics/metrics.js';
import { startWorkerServer } from '../http/worker-server.js';

const ROLES = ['all', 'gateway', 'worker'] as const;
type RoleName = (typeof ROLES)[number];

async function main(): Promise<void> {
  const role = (process.argv[2] ?? 'all') as RoleName;
  if (!ROLES.includes(role)) throw new ConfigError([`usage: main.ts [${ROLES.join('|')}] (got "${role}")`]);
  const config = loadConfig();
  const log = createLogger(config.logLevel).child({ role });
  // Split roles must share one Redis, so only the all-in-one process may start a private one.
  const redis = await ensureRedis(config.redis.url, config.redis.explicit, role === 'all', log);
  let gateway: GatewayRole | undefined;
  /** The worker and its metrics server. */
  const roles: Role[] = [];
  const closeAll = async (force?: boolean) => {
    await Promise.all(roles.map((r) => r.close(force)));
    // The gateway goes last: operators keep the dashboard and admin API while the runs finish.
    await gateway?.close(force);
  };
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: leaving active runs to other workers');
      await closeAll(true);
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, graceMs: config.shutdownGraceMs }, 'stopping: taking no new work, waiting for active runs');
    const forced = setTimeout(() => void closeAll(true), config.shutdownGraceMs);
    // New events go elsewhere before anything closes: a platform redelivers what a draining gateway refused.
    await gateway?.drain();
    await closeAll();
    clearTimeout(forced);
    await redis.stop();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  // One registry per process: in the all-in-one process, /metrics shows the runs too.
  const metrics = new Metrics({ defaultMetrics: true });
  if (role !== 'gateway') roles.push(await startWorkerRole(config, redis.url, log, { metrics }));
  if (role !== 'worker') gateway = await startGatewayRole(config, redis.url, log, { metrics });
  if (role === 'worker' && config.admin.workerMetricsPort > 0) {
    const server = await startWorkerServer(config, metrics);
    roles.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    log.info({ port: config.admin.workerMetricsPort }, 'worker metrics listening');
  }
  log.info({ redis: redis.child ? 'private' : 'shared' }, 'ready');
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof RedisUnavailableError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
