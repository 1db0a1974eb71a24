import type { Config } from '../config/config.js';
import { globalToolLists, requireModel } from '../config/config.js';
import { createOpenAIModel } from '../agent/openai-model.js';
import type { ModelClient } from '../agent/types.js';
import type { OutboundAdapter } from '../channels/types.js';
import { TerminalOutbound } from '../channels/terminal/outbound.js';
import { CHANNELS } from '../channels/registry.js';
import type { Logger } from '../log.js';
import { connectRedis } from '../queue/connection.js';
import { SessionKeys } from '../queue/keys.js';
import { createRunQueue } from '../queue/run-queue.js';
import { startRunWorker } from '../run/worker.js';
import { RunStore } from '../run/record.js';
import { ApprovalDesk } from '../approvals/desk.js';
import { AgentRoster, type AgentProfile } from '../profiles/roster.js';
import { AgentRuntimes } from '../run/agent-runtime.js';
import { memoryStoreOf } from './memory-store.js';
import { postMemoryCard } from '../approvals/memory-card.js';
import { openAIEmbedder, type Embedder } from '../memory/embeddings.js';
import { Identities } from '../memory/identity.js';
import { checkExecRuntime, type ExecOptions } from '../tools/index.js';
import { ConfigError } from '../lib/config-error.js';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { loadMcpConfig, McpRegistry } from '../tools/mcp/index.js';
import type { Workspace } from '../tools/workspace.js';
import { WorkerHeartbeat } from '../queue/worker-heartbeat.js';
import { forgetToolServers, reportToolServers, REPORT_EVERY_MS } from '../queue/tool-servers.js';
import { Metrics } from '../metrics/metrics.js';
import { countedOutbound } from '../metrics/counted-outbound.js';
import { TokenBudget } from '../access/token-budget.js';
import { Producer } from '../queue/producer.js';
import { AccessGate } from '../access/gate.js';
import { PairingStore } from '../access/pairing-store.js';
import { createFiringQueue, ScheduleBook } from '../schedules/schedule-book.js';
import { startFiringWorker } from '../intake/schedule-firing.js';

export interface Role {
  /** `force`: leave active runs to be picked up by another worker instead of waiting for them. */
  close(force?: boolean): Promise<void>;
}

/** The worker role: agent runs from the queue, replies through each platform's outbound half. */
export interface WorkerOptions {
  /** A model client instead of the configured OpenAI-compatible endpoint. */
  model?: ModelClient;
  /** Shared with the gateway when both roles run in one process. */
  metrics?: Metrics;
}

export async function startWorkerRole(config: Config, redisUrl: string, log: Logger, options: WorkerOptions = {}): Promise<Role> {
  const metrics = options.metrics ?? new Metrics();
  const roster = AgentRoster.load(config.agents.configPath);
  metrics.knowAgents(roster.profiles.map((p) => p.name));
  const modelClient = options.model ?? modelOf(config, undefined);
  const exec = await execOptions(config, log);
  const agents = await startAgents(config, roster, modelClient, options.model, log);
  const redis = connectRedis(redisUrl, 'switchboard-worker-state', log);
  const keys = new SessionKeys(config.queue.prefix, config.queue.name);
  const toolServers = await startToolServers(config, redis, log);
  const queue = createRunQueue(config.queue, redis, log);
  const outbounds = new Map<string, OutboundAdapter>([['terminal', countedOutbound(new TerminalOutbound(redis, config.queue.prefix), metrics)]]);
  for (const entry of CHANNELS) {
    if (!entry.enabled(config)) continue;
    const module = await entry.load();
    outbounds.set(module.name, countedOutbound(module.outbound({ config, redis, log: log.child({ channel: module.name }) }), metrics));
  }
  const outbound = (platform: string): OutboundAdapter => {
    const adapter = outbounds.get(platform);
    if (!adapter) throw new Error(`no outbound adapter for platform "${platform}" in this worker`);
    return adapter;
  };
  const memoryStore = memoryStoreOf(config, redis, keys);
  const approvals = new ApprovalDesk(redis, keys, queue, config.approvals, { memory: memoryStore });
  const firings = createFiringQueue(config.queue.prefix, redis, log);
  const book = new ScheduleBook(redis, config.queue.prefix, firings, config.schedules);
  const runWorker = await startRunWorker(redisUrl, config.queue, {
    redis,
    queue,
    keys,
    foldMax: config.queue.foldMax,
    // SCHEDULES_PER_USER=0: nobody makes new schedules (the tools are not offered); existing ones still fire.
    schedules: { book, defaultTz: config.schedules.defaultTz, approvers: config.approvals.approvers, offered: config.schedules.perUser > 0 },
    log,
    metrics,
    runs: new RunStore(redis, config.queue.prefix),
    agents,
    ...(memoryUsed(config, roster) && {
      memory: {
        store: memoryStore,
        ...(config.memory.embeddingsModel !== undefined && { embedder: embedderOf(config, config.memory.embeddingsModel) }),
        identities: new Identities(redis, keys),
        mode: config.memory.mode,
        promptTokens: config.memory.promptTokens,
        askToKeep: async (out, to, entry, who) => void (await postMemoryCard(approvals, out, to, entry, who)),
      },
    }),
    agent: {
      runTimeoutMs: config.agent.runTimeoutMs,
      ...(config.limits.userDailyTokens !== undefined && { tokenBudget: new TokenBudget(redis, config.queue.prefix, config.limits.userDailyTokens) }),
    },
    input: {
      workspaceRoot: config.workspaceRoot,
      attachmentMaxBytes: config.attachmentMaxBytes,
      ...(config.model.vision.enabled && { vision: { imageMaxBytes: config.model.vision.imageMaxBytes } }),
      messageMaxChars: config.limits.messageMaxChars,
    },
    tools: {
      ...(exec && { exec }),
      ...(toolServers && {
        extraTools: (workspace: Workspace, platform: string, servers?: readonly string[]) => toolServers.registry.toolsFor(workspace, platform, servers),
      }),
      approvals,
      approvalTimeoutMs: config.approvals.timeoutMs,
    },
    delivery: {
      streamAnswers: config.streamAnswers,
      statusAfterMs: config.statusAfterMs,
      outbound,
    },
  });
  const firingWorker = await startFiringWorker(connectRedis(redisUrl, 'switchboard-firings', log), config.queue, {
    book,
    producer: new Producer(redis, queue, keys, roster.decider()),
    access: new AccessGate(config.access, new PairingStore(redis, config.queue.prefix), log.child({ part: 'access' }), { metrics }),
    queueMax: config.limits.sessionQueueMax,
    log: log.child({ part: 'schedules' }),
    metrics,
  });
  const heartbeat = new WorkerHeartbeat(redis, config.queue.prefix, (err) => log.warn({ err }, 'worker heartbeat failed'));
  await heartbeat.start();
  log.info(
    { concurrency: config.queue.concurrency, model: modelClient.name, agents: roster.profiles.map((p) => p.name), workerId: heartbeat.id },
    'worker ready',
  );
  return {
    async close(force = false) {
      await heartbeat.stop();
      await firingWorker.close(force);
      await runWorker.close(force);
      await toolServers?.close();
      await queue.close();
      await firings.close();
      redis.disconnect();
    },
  };
}

/**
 * The OpenAI-compatible client of the environment's model (`entry` undefined) or of an agent's
 * own. An agent on another endpoint gets only the key its `apiKeyEnv` names: OPENAI_API_KEY is
 * never sent to a host it was not given for.
 */
function modelOf(config: Config, entry: NonNullable<AgentProfile['model']> | undefined): ModelClient {
  const m = requireModel(config);
  const baseURL = entry?.baseUrl ?? m.baseURL;
  const ownKey = entry?.apiKeyEnv === undefined ? undefined : process.env[entry.apiKeyEnv];
  const sameEndpoint = entry?.baseUrl === undefined || entry.baseUrl === m.baseURL;
  const apiKey = ownKey ?? (sameEndpoint ? m.apiKey : 'not-needed');
  return createOpenAIModel({ apiKey, model: entry?.model ?? m.name, stream: m.stream, timeoutMs: m.timeoutMs, ...(baseURL && { baseURL }) });
}

/**
 * Every agent's runtime. A missing `apiKeyEnv`, an MCP server MCP_CONFIG does not have, a
 * malformed skill or a skills list over SKILLS_PROMPT_TOKENS stops the worker with one line each.
 * A test's model client (`override`) answers for every agent.
 */
async function startAgents(config: Config, roster: AgentRoster, model: ModelClient, override: ModelClient | undefined, log: Logger): Promise<AgentRuntimes> {
  const servers = config.mcpConfigPath === undefined ? undefined : loadMcpConfig(config.mcpConfigPath, process.env).servers.map((s) => s.name);
  const problems = roster.problems(process.env, servers);
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `config: AGENTS_CONFIG: ${p}`));
  return AgentRuntimes.start(roster, {
    model,
    modelFor: (entry) => override ?? modelOf(config, entry),
    limits: { ...config.agent.limits, toolTimeoutMs: config.agent.toolTimeoutMs },
    historyTokens: config.agent.historyTokens,
    tools: globalToolLists(config),
    skillsPromptTokens: config.agents.skillsPromptTokens,
    log: log.child({ component: 'skills' }),
  });
}

/** EMBEDDINGS_MODEL at the model endpoint, with its key. */
function embedderOf(config: Config, model: string): Embedder {
  const m = requireModel(config);
  return openAIEmbedder({ apiKey: m.apiKey, baseURL: m.baseURL, model, timeoutMs: m.timeoutMs });
}

/** Memory is on for some agent: MEMORY, or an agent's own `memory:`. */
function memoryUsed(config: Config, roster: AgentRoster): boolean {
  return roster.profiles.some((p) => (p.memory ?? config.memory.mode) !== 'off');
}

/**
 * run_command's options when TOOLS_EXEC is on or approve. A worker refuses to start when the
 * sandbox it needs cannot run (one line: how to install bubblewrap, or EXEC_SANDBOX=none).
 */
async function execOptions(config: Config, log: Logger): Promise<ExecOptions | undefined> {
  if (config.exec.mode === 'off') return undefined;
  const { mode: _mode, ...options } = config.exec;
  const check = await checkExecRuntime(options);
  if (!check.ok) throw new ConfigError([`config: TOOLS_EXEC=${config.exec.mode}: ${check.error}`]);
  if (check.warning) log.warn({ sandbox: options.sandbox }, check.warning);
  log.info({ mode: config.exec.mode, sandbox: options.sandbox, network: options.network }, 'run_command enabled');
  return options;
}

/**
 * The MCP servers of MCP_CONFIG, connected for this worker (stdio servers are its child
 * processes). A wrong file stops the worker with one line; a server that is down does not: its
 * tools are left out until it reconnects, and the worker reports it for the gateways' /readyz.
 */
async function startToolServers(config: Config, redis: Redis, log: Logger): Promise<{ registry: McpRegistry; close(): Promise<void> } | undefined> {
  if (config.mcpConfigPath === undefined) return undefined;
  const registry = await McpRegistry.start(loadMcpConfig(config.mcpConfigPath, process.env), {
    log: log.child({ component: 'mcp' }),
    toolTimeoutMs: config.agent.toolTimeoutMs,
    mediaMaxBytes: config.attachmentMaxBytes,
  });
  const workerId = `${hostname()}:${process.pid}`;
  const report = () =>
    reportToolServers(redis, config.queue.prefix, workerId, registry.status()).catch((err: unknown) => log.warn({ err }, 'could not report the MCP servers'));
  await report();
  const timer = setInterval(() => void report(), REPORT_EVERY_MS);
  timer.unref();
  log.info({ servers: registry.status() }, 'MCP servers started');
  return {
    registry,
    async close() {
      clearInterval(timer);
      await forgetToolServers(redis, config.queue.prefix, workerId).catch(() => undefined);
      await registry.close();
    },
  };
}
