import { createServer, type Server } from 'node:http';
import type { Config } from '../config/config.js';
import type { Logger } from '../log.js';
import { connectRedis } from '../queue/connection.js';
import type { Role } from './worker.js';

/**
 * The gateway role: the HTTP server (health now; Slack events, the Telegram webhook, the
 * dashboard and metrics as those channels land) and the channels' inbound halves.
 */
export async function startGatewayRole(config: Config, redisUrl: string, log: Logger): Promise<Role & { server: Server }> {
  const redis = connectRedis(redisUrl, 'switchboard-gateway', { maxRetriesPerRequest: 1 });
  for (const name of Object.keys(config.channels)) {
    log.warn({ channel: name }, `the ${name} channel is configured but not part of this version yet; it stays off`);
  }
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
      return;
    }
    if (req.method === 'GET' && path === '/readyz') {
      redis
        .ping()
        .then(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, redis: 'ok' })))
        .catch((err: unknown) =>
          res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, redis: String(err) })),
        );
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, () => resolve());
  });
  const address = server.address();
  log.info({ port: typeof address === 'object' && address ? address.port : config.port }, 'gateway listening');
  return {
    server,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      redis.disconnect();
    },
  };
}
