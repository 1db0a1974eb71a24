import type { Server } from 'node:http';
import type { Config } from '../config/config.js';
import type { Logger } from '../log.js';
import { CHANNELS, type InboundChannel } from '../channels/registry.js';
import { Intake } from '../intake/intake.js';
import { createHttpApp, mountDrainSwitch, mountErrorHandler, mountHealth } from '../http/app.js';
import { connectRedis } from '../queue/connection.js';
import { SessionControl } from '../session/control.js';
import { SessionKeys } from '../queue/keys.js';
import { Producer } from '../queue/producer.js';
import { AgentRoster } from '../profiles/roster.js';
import { AgentCommand } from '../intake/agent-command.js';
import { agentFacts } from './agent-facts.js';
import { MemoryCommand } from '../intake/memory-command.js';
import { Identities } from '../memory/identity.js';
import { MemoryAdmin } from '../memory/admin.js';
import { memoryStoreOf } from './memory-store.js';
import { createRunQueue } from '../queue/run-queue.js';
import type { Role } from './worker.js';
import { Metrics } from '../metrics/metrics.js';
import { mountAdmin } from '../http/admin.js';
import { RunStore } from '../run/record.js';
import { ApprovalDesk } from '../approvals/desk.js';
import { toolServerProblems } from '../queue/tool-servers.js';
import { AccessGate } from '../access/gate.js';
import { PairingStore } from '../access/pairing-store.js';
import { UserRateLimit } from '../access/rate-limit.js';
import { warnOpenDoors } from '../access/warnings.js';
import { RefusalNotices } from '../access/refusal-notice.js';
import { gatedApprovals } from '../approvals/gated.js';
import { PairingAdmin } from '../access/pairing-admin.js';
import { outboundNotify } from './outbound-notify.js';
import { createFiringQueue, ScheduleBook } from '../schedules/schedule-book.js';

export interface GatewayRole extends Role {
  server: Server;
  channels: InboundChannel[];
  intake: Intake;
  /**
   * The first step of a graceful stop: refuses new webhook events (503, for the platform to
   * deliver them to another gateway), reports not ready, and stops the channels' connections
   * (polling, sockets). The HTTP server and the admin API stay up until close().
   */
  drain(): Promise<void>;
}

/**
 * The gateway role: the HTTP server (health, webhooks) and the inbound half of every enabled
 * channel, each handing normalised messages to the intake.
 */
export async function startGatewayRole(config: Config, redisUrl: string, log: Logger, options: { metrics?: Metrics } = {}): Promise<GatewayRole> {
  const metrics = options.metrics ?? new Metrics();
  const redis = connectRedis(redisUrl, 'switchboard-gateway', log);
  const keys = new SessionKeys(config.queue.prefix, config.queue.name);
  const queue = createRunQueue(config.queue, redis, log);
  const roster = AgentRoster.load(config.agents.configPath);
  const memoryStore = memoryStoreOf(config, redis, keys);
  const identities = new Identities(redis, keys);
  const producer = new Producer(redis, queue, keys, roster.decider());
  const approvals = new ApprovalDesk(redis, keys, queue, config.approvals, { memory: memoryStore });
  const control = new SessionControl(redis, keys, approvals);
  const pairing = new PairingStore(redis, config.queue.prefix);
  const rate = config.limits.userRatePerMinute > 0 ? new UserRateLimit(redis, config.queue.prefix, config.limits.userRatePerMinute) : undefined;
  const gate = new AccessGate(config.access, pairing, log.child({ part: 'access' }), {
    ...(rate && { rate }),
    notices: new RefusalNotices(redis, config.queue.prefix),
    approvers: config.approvals.approvers,
    metrics,
  });
  const firings = createFiringQueue(config.queue.prefix, redis, log);
  const schedules = new ScheduleBook(redis, config.queue.prefix, firings, config.schedules);
  const intake = new Intake(producer, control, log, {
    gate,
    answered: { redis, prefix: config.queue.prefix },
    queueMax: config.limits.sessionQueueMax,
    schedules: { book: schedules, approvers: config.approvals.approvers },
    agents: new AgentCommand(redis, keys, agentFacts(config, roster, log)),
    memory: new MemoryCommand(redis, keys, memoryStore, identities, roster, config.memory.mode),
    metrics,
  });
  warnOpenDoors(config, log);
  metrics.queueDepth(() => queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized'));
  const app = createHttpApp(config.http.trustProxy);
  const drainSwitch = mountDrainSwitch(app);
  const channels: InboundChannel[] = [];
  mountHealth(app, {
    redis,
    prefix: config.queue.prefix,
    channels: () => channels,
    draining: () => drainSwitch.draining,
    toolServerProblems: () => toolServerProblems(redis, config.queue.prefix),
    adminToken: config.adminToken,
  });
  mountAdmin(app, {
    token: config.adminToken,
    readonly: config.admin.readonly,
    metricsPublic: config.admin.metricsPublic,
    queue,
    redis,
    keys,
    control,
    producer,
    runs: new RunStore(redis, config.queue.prefix),
    metrics,
    pairing: new PairingAdmin(pairing, outboundNotify(config, redis, log), log.child({ part: 'pairing' })),
    schedules,
    memory: new MemoryAdmin(memoryStore, identities),
    log,
  });
  for (const entry of CHANNELS) {
    if (!entry.enabled(config)) continue;
    const module = await entry.load();
    channels.push(
      module.inbound({
        config,
        intake,
        app,
        redis,
        prefix: config.queue.prefix,
        approvals: gatedApprovals(gate, approvals),
        log: log.child({ channel: module.name }),
      }),
    );
  }
  mountErrorHandler(app, log);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const address = server.address();
  log.info({ port: typeof address === 'object' && address ? address.port : config.port, channels: channels.map((c) => c.name) }, 'gateway listening');
  await Promise.all(channels.map((c) => c.start()));

  let drained: Promise<void> | undefined;
  const drain = () => {
    if (!drained) {
      log.info('draining: refusing new webhook events, stopping the channels');
      drainSwitch.drain();
      drained = Promise.all(channels.map((c) => c.stop().catch((err: unknown) => log.error({ err, channel: c.name }, 'channel stop failed')))).then(
        () => undefined,
      );
    }
    return drained;
  };
  let closed: Promise<void> | undefined;
  const shutdown = async () => {
    await drain();
    // server.close() also closes idle keep-alive connections and lets requests in flight finish.
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await queue.close();
    await firings.close();
    redis.disconnect();
  };
  return {
    server,
    channels,
    intake,
    drain,
    async close(force = false) {
      // A webhook request cut before its answer is delivered again by its platform.
      if (force) server.closeAllConnections();
      await (closed ??= shutdown());
    },
  };
}
