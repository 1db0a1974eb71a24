import { resolve } from 'node:path';
import type { AgentLimits } from '../agent/types.js';
import type { ExecOptions } from '../tools/sandbox.js';
import type { ApprovalRule } from '../tools/policy.js';
import type { Env } from './schema.js';
import { ConfigError } from '../lib/config-error.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface ModelConfig {
  apiKey: string | undefined;
  baseURL: string | undefined;
  name: string;
  stream: boolean;
  timeoutMs: number;
  /** MODEL_VISION: image attachments (up to imageMaxBytes each) go to the model as image parts. */
  vision: { enabled: boolean; imageMaxBytes: number };
}

export interface QueueConfig {
  /** Hash-tagged key prefix shared by BullMQ and our session keys (one Cluster slot). */
  prefix: string;
  name: string;
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  reconcileIntervalMs: number;
  /** Messages of one session waiting together are folded into one turn, at most this many. */
  foldMax: number;
}

export type DmPolicy = NonNullable<Env['DM_POLICY']>;
export type MemoryMode = Env['MEMORY'];

/** Who may talk to the bot (access/gate.ts applies it). The terminal chat is local: none of it applies there. */
export interface AccessConfig {
  /** Per platform: what an unknown DM sender gets. */
  dm: Record<'telegram' | 'slack' | 'discord', DmPolicy>;
  /** `platform:userId` (Telegram also `telegram:username`, lowercase, without @): let in under every DM policy but `disabled`. */
  allowedUsers: string[];
  /** The legacy TELEGRAM_ALLOWED_USERS: when set, also restricts who may address the bot in Telegram groups (as it always did). */
  telegramGroupSenders: boolean;
  /**
   * `pairing`: in groups, only senders the DM policy lets in, or members of a vouched place
   * (ALLOWED_CHANNELS, the installing Slack workspace); `allowlist`: the same, and only in
   * ALLOWED_CHANNELS; `open`: anyone in any group.
   */
  group: 'pairing' | 'allowlist' | 'open';
  /** `slack:C…`, `telegram:-100…`, `discord:<guildId>` or `discord:<channelId>`. */
  allowedChannels: string[];
}

export interface LimitsConfig {
  /** Messages per minute per user (0: no limit). */
  userRatePerMinute: number;
  /** Model tokens per user per UTC day; undefined: no limit. */
  userDailyTokens: number | undefined;
  /** Waiting messages per session; the next one is refused with a notice. */
  sessionQueueMax: number;
  /** A longer message is saved in the workspace as a file and the turn says so. */
  messageMaxChars: number;
}

export interface Config {
  redis: { url: string /** false when REDIS_URL was not set: we may start a private redis-server */; explicit: boolean };
  model: ModelConfig;
  workspaceRoot: string;
  /** STREAM_ANSWERS: the answer is shown while the model writes it. */
  streamAnswers: boolean;
  /** STATUS_AFTER_MS: a run's status message waits this long from the run's start (a quick answer comes alone). */
  statusAfterMs: number;
  /**
   * LINK_PREVIEWS: links in answers may get the platform's preview (Telegram link preview, Slack
   * unfurl, Discord embed). Off by default: the platform fetches a previewed URL with no click, so
   * a link the model was steered into writing would carry data out. Status lines and approval
   * cards never preview.
   */
  linkPreviews: boolean;
  port: number;
  adminToken: string | undefined;
  logLevel: Env['LOG_LEVEL'];
  queue: QueueConfig;
  agent: {
    limits: AgentLimits;
    historyTokens: number;
    /** Wall-clock deadline of one agent run. */
    runTimeoutMs: number;
    /** Deadline of one tool call. */
    toolTimeoutMs: number;
  };
  admin: { readonly: boolean; metricsPublic: boolean /** A worker-only process serves /metrics here (0: off). */; workerMetricsPort: number };
  /** TRUST_PROXY: express's `trust proxy` (false: X-Forwarded-* are ignored; hops; or proxy addresses/subnets). */
  http: { trustProxy: false | number | string[] };
  /** Largest attachment a channel downloads into a workspace. */
  attachmentMaxBytes: number;
  /** The run_command tool: off, only after a person approves each call, or on; and how it runs. */
  exec: ExecOptions & { mode: Env['TOOLS_EXEC'] };
  /** On SIGTERM/SIGINT, how long active runs may take to finish before they are left to other workers. */
  shutdownGraceMs: number;
  /** Tool policy: `tool` or `platform:tool` entries. */
  tools: { deny: string[]; approve: string[] };
  /** Who may decide a call's approval (APPROVAL_BY over APPROVERS, tools/policy.ts mayDecide), and how long a call waits for a decision. */
  approvals: ApprovalRule & { approvers: string[]; timeoutMs: number };
  /** The MCP servers file (`mcpServers` format), if any. */
  mcpConfigPath: string | undefined;
  /** AGENTS_CONFIG: the agents and bindings file, if any (src/profiles); SKILLS_PROMPT_TOKENS bounds each agent's skills list. */
  agents: { configPath: string | undefined; skillsPromptTokens: number };
  /** MEMORY and friends: what is remembered about each person (src/memory); an agent's `memory:` overrides the mode. */
  memory: { mode: MemoryMode; maxEntries: number; promptTokens: number; retentionDays: number | undefined; embeddingsModel: string | undefined };
  access: AccessConfig;
  limits: LimitsConfig;
  /** The schedules people make from the chat (schedule_task): the default timezone, how many each, how often at most. */
  schedules: { defaultTz: string | undefined; perUser: number; minIntervalMs: number };
  channels: {
    telegram?: {
      token: string;
      apiRoot: string | undefined;
      webhookUrl: string | undefined;
      webhookSecret: string | undefined;
      /** TELEGRAM_DRAFTS: private chats stream the answer as a draft (sendMessageDraft) instead of edits. */
      drafts: boolean;
    };
    slack?: { botToken: string; signingSecret: string | undefined; appToken: string | undefined; apiUrl: string | undefined; threadFollowups: boolean };
    discord?: { token: string; applicationId: string; apiUrl: string | undefined; guildId: string | undefined; messageContent: boolean };
  };
}

export function deriveConfig(env: Env): Config {
  return {
    redis: { url: env.REDIS_URL ?? DEFAULT_REDIS_URL, explicit: env.REDIS_URL !== undefined },
    model: {
      apiKey: env.OPENAI_API_KEY,
      baseURL: env.OPENAI_BASE_URL,
      name: env.AGENT_MODEL,
      // A streamed answer needs a streamed model call; MODEL_STREAM alone streams the call without showing it.
      stream: env.MODEL_STREAM || env.STREAM_ANSWERS,
      timeoutMs: env.MODEL_TIMEOUT_MS,
      vision: { enabled: env.MODEL_VISION, imageMaxBytes: env.IMAGE_MAX_BYTES },
    },
    workspaceRoot: resolve(env.WORKSPACE_ROOT),
    streamAnswers: env.STREAM_ANSWERS,
    statusAfterMs: env.STATUS_AFTER_MS,
    linkPreviews: env.LINK_PREVIEWS,
    port: env.PORT,
    adminToken: env.ADMIN_TOKEN,
    logLevel: env.LOG_LEVEL,
    queue: {
      prefix: env.QUEUE_PREFIX,
      name: 'runs',
      concurrency: env.WORKER_CONCURRENCY,
      lockDurationMs: env.LOCK_DURATION_MS,
      stalledIntervalMs: env.STALLED_INTERVAL_MS,
      reconcileIntervalMs: env.RECONCILE_INTERVAL_MS,
      foldMax: env.FOLD_MAX_MESSAGES,
    },
    agent: {
      limits: {
        maxSteps: env.AGENT_MAX_STEPS,
        maxContextTokens: env.AGENT_CONTEXT_TOKENS,
        modelRetries: env.AGENT_MODEL_RETRIES,
        maxRetryDelayMs: 60_000,
      },
      historyTokens: env.AGENT_HISTORY_TOKENS,
      runTimeoutMs: env.AGENT_RUN_TIMEOUT_MS,
      toolTimeoutMs: env.TOOL_TIMEOUT_MS,
    },
    admin: { readonly: env.ADMIN_READONLY, metricsPublic: env.METRICS_PUBLIC, workerMetricsPort: env.WORKER_METRICS_PORT },
    http: { trustProxy: env.TRUST_PROXY },
    attachmentMaxBytes: env.ATTACHMENT_MAX_BYTES,
    exec: { mode: env.TOOLS_EXEC, sandbox: env.EXEC_SANDBOX, network: env.EXEC_NETWORK, maxTimeoutS: env.EXEC_MAX_TIMEOUT_S },
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
    tools: { deny: env.TOOLS_DENY, approve: env.TOOLS_APPROVE },
    // With APPROVERS named, the requester does not approve their own call unless APPROVAL_BY=either says so.
    approvals: { approvers: env.APPROVERS, by: env.APPROVAL_BY ?? (env.APPROVERS.length > 0 ? 'approvers' : 'requester'), timeoutMs: env.APPROVAL_TIMEOUT_MS },
    mcpConfigPath: env.MCP_CONFIG === undefined ? undefined : resolve(env.MCP_CONFIG),
    agents: { configPath: env.AGENTS_CONFIG === undefined ? undefined : resolve(env.AGENTS_CONFIG), skillsPromptTokens: env.SKILLS_PROMPT_TOKENS },
    memory: {
      mode: env.MEMORY,
      maxEntries: env.MEMORY_MAX_ENTRIES,
      promptTokens: env.MEMORY_PROMPT_TOKENS,
      retentionDays: env.MEMORY_RETENTION_DAYS,
      embeddingsModel: env.EMBEDDINGS_MODEL,
    },
    access: accessOf(env),
    limits: {
      userRatePerMinute: env.USER_RATE_LIMIT,
      userDailyTokens: env.USER_DAILY_TOKENS,
      sessionQueueMax: env.SESSION_QUEUE_MAX,
      messageMaxChars: env.MESSAGE_MAX_CHARS,
    },
    schedules: { defaultTz: env.SCHEDULE_TZ, perUser: env.SCHEDULES_PER_USER, minIntervalMs: env.SCHEDULE_MIN_INTERVAL_S * 1000 },
    channels: {
      ...(env.TELEGRAM_BOT_TOKEN && {
        telegram: {
          token: env.TELEGRAM_BOT_TOKEN,
          apiRoot: env.TELEGRAM_API_ROOT,
          webhookUrl: env.TELEGRAM_WEBHOOK_URL,
          webhookSecret: env.TELEGRAM_WEBHOOK_SECRET,
          drafts: env.TELEGRAM_DRAFTS,
        },
      }),
      ...(env.SLACK_BOT_TOKEN && {
        slack: {
          botToken: env.SLACK_BOT_TOKEN,
          signingSecret: env.SLACK_SIGNING_SECRET,
          appToken: env.SLACK_APP_TOKEN,
          apiUrl: env.SLACK_API_URL,
          threadFollowups: env.SLACK_THREAD_FOLLOWUPS,
        },
      }),
      ...(env.DISCORD_TOKEN &&
        env.DISCORD_APPLICATION_ID && {
          discord: {
            token: env.DISCORD_TOKEN,
            applicationId: env.DISCORD_APPLICATION_ID,
            apiUrl: env.DISCORD_API_URL,
            guildId: env.DISCORD_GUILD_ID,
            messageContent: env.DISCORD_MESSAGE_CONTENT,
          },
        }),
    },
  };
}

/**
 * DM_POLICY for every platform unless `<PLATFORM>_DM_POLICY` says otherwise; default `pairing`.
 * TELEGRAM_ALLOWED_USERS keeps meaning what it meant: its users join ALLOWED_USERS, and with no
 * Telegram DM policy set, Telegram DMs are an allowlist.
 */
function accessOf(env: Env): AccessConfig {
  const legacy = (env.TELEGRAM_ALLOWED_USERS ?? '')
    .split(',')
    .map((u) => u.trim().replace(/^@/, ''))
    .filter(Boolean);
  const all = env.DM_POLICY;
  return {
    dm: {
      telegram: env.TELEGRAM_DM_POLICY ?? all ?? (legacy.length > 0 ? 'allowlist' : 'pairing'),
      slack: env.SLACK_DM_POLICY ?? all ?? 'pairing',
      discord: env.DISCORD_DM_POLICY ?? all ?? 'pairing',
    },
    allowedUsers: [...new Set([...env.ALLOWED_USERS.map(userEntry), ...legacy.map((u) => userEntry(`telegram:${u}`))])],
    telegramGroupSenders: legacy.length > 0,
    group: env.GROUP_POLICY,
    allowedChannels: env.ALLOWED_CHANNELS,
  };
}

/** `telegram:@Ada` → `telegram:ada` (usernames match in any case); ids stay as written. */
function userEntry(entry: string): string {
  const [platform, id] = [entry.slice(0, entry.indexOf(':')), entry.slice(entry.indexOf(':') + 1)];
  return platform === 'telegram' && !/^\d+$/.test(id.replace(/^@/, ''))
    ? `telegram:${id.replace(/^@/, '').toLowerCase()}`
    : `${platform}:${id.replace(/^@/, '')}`;
}

/** TOOLS_DENY and TOOLS_APPROVE as every agent starts from them: TOOLS_EXEC=approve puts run_command on the approve list. */
export function globalToolLists(config: Config): { deny: string[]; approve: string[] } {
  return { deny: config.tools.deny, approve: [...config.tools.approve, ...(config.exec.mode === 'approve' ? ['run_command'] : [])] };
}

/** The worker role needs a model; the gateway does not. Local servers (Ollama, vLLM) need no key. */
export function requireModel(config: Config): ModelConfig & { apiKey: string } {
  const { model } = config;
  if (model.apiKey) return { ...model, apiKey: model.apiKey };
  if (model.baseURL) return { ...model, apiKey: 'not-needed' };
  throw new ConfigError([
    'config: OPENAI_API_KEY is required to run the agent (or set OPENAI_BASE_URL to a local OpenAI-compatible server such as Ollama: http://127.0.0.1:11434/v1)',
  ]);
}
