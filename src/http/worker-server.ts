import type { Server } from 'node:http';
import type { Config } from '../config/config.js';
import type { Metrics } from '../metrics/metrics.js';
import { adminGuard, failedAttemptsOf } from './auth.js';
import { mountMetrics } from './admin.js';
import { createHttpApp } from './app.js';

/** A worker-only process's HTTP surface: /healthz and its own /metrics, for Prometheus to scrape. */
export async function startWorkerServer(config: Config, metrics: Metrics): Promise<Server> {
  const app = createHttpApp(config.http.trustProxy);
  app.get('/healthz', (_req, res) => void res.json({ ok: true }));
  mountMetrics(app, metrics, config.admin.metricsPublic ? [] : adminGuard(config.adminToken, failedAttemptsOf(app)));
  return new Promise<Server>((resolve, reject) => {
    const server = app.listen(config.admin.workerMetricsPort, (err?: Error) => (err ? reject(err) : resolve(server)));
  });
}
