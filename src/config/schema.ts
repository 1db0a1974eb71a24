import { isIP } from 'node:net';
import { z } from 'zod';
import { isTimezone } from '../lib/time.js';

/**
 * The configuration contract of ../DESIGN.md, plus the knobs of the queue and the agent loop.
 * Every variable carries its own message: a wrong value stops start-up with one line that names
 * the variable and what is expected.
 */

const text = (what: string) =>
  z
    .string({ error: `must be ${what}` })
    .trim()
    .min(1, `must be ${what}`);
const optionalText = (what: string) => text(what).optional();

const url = (what: string) => text(what).refine((v) => URL.canParse(v), `must be ${what} (an absolute URL such as http://host:port)`);

const int = (min: number, max: number, fallback: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be a whole number from ${min} to ${max}`).max(max, `must be a whole number from ${min} to ${max}`))
    .optional()
    .transform((v) => v ?? fallback);

const TOOL_ENTRY = /^([a-z]+:)?[A-Za-z0-9_.-]+$/;
const APPROVER_ENTRY = /^[a-z]+:[^\s,:]+$/;

/** A comma-separated list whose every entry matches `entry` (empty entries ignored). */
const list = (entry: RegExp, what: string) =>
  z
    .string()
    .optional()
    .transform((v) =>
      (v ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .refine((items) => items.every((x) => entry.test(x)), `must be a comma-separated list of ${what}`);

const DM_POLICY = z.enum(['pairing', 'allowlist', 'open', 'disabled'], { error: 'must be pairing, allowlist, open or disabled' });
const USER_ENTRY = /^(telegram|slack|discord):@?[^\s,:@]+$/;
const CHANNEL_ENTRY = /^(telegram|slack|discord):[^\s,:]+$/;

const flag = (fallback: boolean) =>
  z
    .enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'], { error: 'must be 1 or 0 (true/false)' })
    .optional()
    .transform((v) => (v === undefined ? fallback : ['1', 'true', 'yes', 'on'].includes(v)));

/** One entry of TRUST_PROXY's list: express's names, or an address with an optional /prefix. */
const isProxyEntry = (entry: string) => {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const [ip = '', bits, ...rest] = entry.split('/');
  const family = isIP(ip);
  return family !== 0 && rest.length === 0 && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)));
};

/**
 * TRUST_PROXY, express's `trust proxy`: whose X-Forwarded-For/-Proto/-Host to believe. Never
 * `true` (everyone's): then any client could pick the address the admin limiter counts.
 */
const trustProxy = z
  .string()
  .trim()
  .optional()
  .transform((v, ctx): false | number | string[] => {
    if (v === undefined || v === '0') return false;
    if (/^\d{1,2}$/.test(v)) return Number(v);
    const entries = v.split(',').map((x) => x.trim());
    if (entries.every(isProxyEntry)) return entries;
    ctx.addIssue({
      code: 'custom',
      message:
        'must be 0 (do not trust X-Forwarded-For), a number of proxy hops such as 1, or a comma-separated list of proxy addresses and subnets such as loopback,10.0.0.0/8',
    });
    return z.NEVER;
  });

export const envSchema = z
  .object({
    REDIS_URL: url('a Redis URL such as redis://127.0.0.1:6379')
      .refine(
        // An unparsable URL is already reported by the check above (one line per variable).
        (v) => !URL.canParse(v) || /^rediss?(\+cluster)?:$/.test(new URL(v).protocol),
        'must start with redis://, rediss:// or redis+cluster:// (a seed node of a Redis Cluster)',
      )
      .optional(),
    OPENAI_API_KEY: optionalText('an API key'),
    OPENAI_BASE_URL: url('an OpenAI-compatible /v1 base URL').optional(),
    AGENT_MODEL: text('a model name such as gpt-4.1-mini').default('gpt-4.1-mini'),
    MODEL_STREAM: flag(false),
    STREAM_ANSWERS: flag(true),
    STATUS_AFTER_MS: int(0, 60_000, 1_000),
    LINK_PREVIEWS: flag(false),
    MODEL_TIMEOUT_MS: int(1_000, 600_000, 120_000),
    MODEL_VISION: flag(false),
    IMAGE_MAX_BYTES: int(1_024, 50_000_000, 5_000_000),
    WORKSPACE_ROOT: text('a folder path').default('./data/workspaces'),
    PORT: int(0, 65_535, 3000),
    ADMIN_TOKEN: text('a non-empty token').min(12, 'must be at least 12 characters').optional(),
    LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
        error: 'must be one of fatal, error, warn, info, debug, trace, silent',
      })
      .default('info'),

    QUEUE_PREFIX: text('a key prefix in a Redis hash tag such as {switchboard}')
      .regex(/^\{[A-Za-z0-9_.-]+\}$/, 'must be a Redis hash tag such as {switchboard} (one slot, so Redis Cluster works)')
      .default('{switchboard}'),
    WORKER_CONCURRENCY: int(1, 1_000, 8),
    LOCK_DURATION_MS: int(1_000, 600_000, 30_000),
    STALLED_INTERVAL_MS: int(500, 600_000, 15_000),
    RECONCILE_INTERVAL_MS: int(1_000, 3_600_000, 30_000),
    FOLD_MAX_MESSAGES: int(1, 100, 10),
    SHUTDOWN_GRACE_MS: int(0, 3_600_000, 30_000),

    AGENT_MAX_STEPS: int(1, 500, 20),
    AGENT_CONTEXT_TOKENS: int(1_000, 2_000_000, 100_000),
    AGENT_HISTORY_TOKENS: int(0, 1_000_000, 16_000),
    AGENT_MODEL_RETRIES: int(0, 20, 4),
    AGENT_RUN_TIMEOUT_MS: int(1_000, 86_400_000, 900_000),
    TOOL_TIMEOUT_MS: int(100, 3_600_000, 60_000),
    TOOLS_DENY: list(TOOL_ENTRY, 'tool names or platform:tool entries, e.g. write_file,telegram:run_command'),
    TOOLS_APPROVE: list(TOOL_ENTRY, 'tool names or platform:tool entries, e.g. run_command,slack:edit_file'),
    APPROVERS: list(APPROVER_ENTRY, 'platform:userId entries, e.g. slack:U0123ABC,telegram:42'),
    APPROVAL_BY: z.enum(['requester', 'approvers', 'either'], { error: 'must be requester, approvers or either' }).optional(),
    APPROVAL_TIMEOUT_MS: int(1_000, 86_400_000, 600_000),
    MCP_CONFIG: optionalText('the path of a JSON file in the mcpServers format'),
    AGENTS_CONFIG: optionalText('the path of a YAML or JSON file of agents and bindings'),
    SKILLS_PROMPT_TOKENS: int(0, 100_000, 1_500),
    MEMORY: z.enum(['person', 'person+channel', 'off'], { error: 'must be person, person+channel or off' }).default('person'),
    MEMORY_MAX_ENTRIES: int(1, 100_000, 500),
    EMBEDDINGS_MODEL: optionalText('an embeddings model name such as text-embedding-3-small'),
    MEMORY_PROMPT_TOKENS: int(0, 100_000, 400),
    MEMORY_RETENTION_DAYS: z
      .string()
      .trim()
      .regex(/^[1-9]\d*$/, 'must be a whole number of days above 0 (unset: kept until forgotten)')
      .transform(Number)
      .optional(),

    ATTACHMENT_MAX_BYTES: int(0, 2_000_000_000, 20_000_000),

    DM_POLICY: DM_POLICY.optional(),
    TELEGRAM_DM_POLICY: DM_POLICY.optional(),
    SLACK_DM_POLICY: DM_POLICY.optional(),
    DISCORD_DM_POLICY: DM_POLICY.optional(),
    ALLOWED_USERS: list(USER_ENTRY, 'platform:userId entries, e.g. slack:U0123ABC,telegram:42,telegram:@ada,discord:80351110224678912'),
    GROUP_POLICY: z.enum(['pairing', 'allowlist', 'open'], { error: 'must be pairing, allowlist or open' }).default('pairing'),
    ALLOWED_CHANNELS: list(CHANNEL_ENTRY, 'platform:id entries, e.g. slack:C0123ABC,telegram:-1001234567890,discord:<guildId or channelId>'),
    USER_RATE_LIMIT: int(0, 100_000, 20),
    USER_DAILY_TOKENS: z
      .string()
      .trim()
      .regex(/^[1-9]\d*$/, 'must be a whole number of tokens above 0 (unset: no limit)')
      .transform(Number)
      .optional(),
    SESSION_QUEUE_MAX: int(1, 100_000, 50),
    MESSAGE_MAX_CHARS: int(100, 10_000_000, 20_000),
    SCHEDULE_TZ: text('an IANA timezone name').refine(isTimezone, 'must be an IANA timezone name, e.g. Europe/Berlin, America/New_York or UTC').optional(),
    SCHEDULES_PER_USER: int(0, 10_000, 10),
    SCHEDULE_MIN_INTERVAL_S: int(1, 86_400, 60),

    TOOLS_EXEC: z.enum(['off', 'approve', 'on'], { error: 'must be off, approve or on' }).default('off'),
    EXEC_SANDBOX: z.enum(['bwrap', 'none'], { error: 'must be bwrap or none (no sandbox: commands run on the host)' }).default('bwrap'),
    EXEC_NETWORK: flag(false),
    EXEC_MAX_TIMEOUT_S: int(1, 86_400, 600),

    TELEGRAM_BOT_TOKEN: optionalText('a bot token from @BotFather'),
    TELEGRAM_API_ROOT: url('a Bot API root URL').optional(),
    TELEGRAM_DRAFTS: flag(false),
    TELEGRAM_WEBHOOK_URL: url('the public HTTPS URL Telegram posts updates to').optional(),
    TELEGRAM_WEBHOOK_SECRET: text('a secret token')
      .regex(/^[A-Za-z0-9_-]{1,256}$/, 'must be 1-256 characters of A-Z, a-z, 0-9, _ and -')
      .optional(),
    TELEGRAM_ALLOWED_USERS: optionalText('a comma-separated list of Telegram user ids or @usernames'),
    SLACK_BOT_TOKEN: optionalText('a bot token (xoxb-…)'),
    SLACK_SIGNING_SECRET: optionalText('the app signing secret'),
    SLACK_APP_TOKEN: optionalText('an app-level token (xapp-…)'),
    SLACK_API_URL: url('a Slack Web API base URL').optional(),
    SLACK_THREAD_FOLLOWUPS: flag(false),
    DISCORD_TOKEN: optionalText('a bot token'),
    DISCORD_APPLICATION_ID: optionalText('the application id'),
    DISCORD_API_URL: url('a Discord REST base URL').optional(),
    DISCORD_GUILD_ID: optionalText('a guild (server) id'),
    DISCORD_MESSAGE_CONTENT: flag(true),

    WORKER_METRICS_PORT: int(0, 65_535, 0),
    ADMIN_READONLY: flag(false),
    METRICS_PUBLIC: flag(false),
    TRUST_PROXY: trustProxy,
  })
  .superRefine((env, ctx) => {
    const pair = (a: keyof typeof env, b: keyof typeof env, why: string) => {
      if (env[a] !== undefined && env[b] === undefined) ctx.addIssue({ code: 'custom', path: [b], message: `is required when ${a} is set (${why})` });
    };
    if (env.SLACK_BOT_TOKEN !== undefined && env.SLACK_SIGNING_SECRET === undefined && env.SLACK_APP_TOKEN === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['SLACK_SIGNING_SECRET'],
        message: 'is required when SLACK_BOT_TOKEN is set without SLACK_APP_TOKEN (Slack signs every HTTP request with it)',
      });
    }
    pair('DISCORD_TOKEN', 'DISCORD_APPLICATION_ID', 'slash commands are registered under it');
    pair('DISCORD_APPLICATION_ID', 'DISCORD_TOKEN', 'the bot logs in with it');
    if (env.SLACK_APP_TOKEN !== undefined && env.SLACK_BOT_TOKEN === undefined) {
      ctx.addIssue({ code: 'custom', path: ['SLACK_BOT_TOKEN'], message: 'is required when SLACK_APP_TOKEN is set' });
    }
    if (env.APPROVAL_BY === 'approvers' && env.APPROVERS.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['APPROVERS'], message: 'is required when APPROVAL_BY=approvers (nobody could approve a call)' });
    }
    if (env.LOCK_DURATION_MS <= env.STALLED_INTERVAL_MS / 2) {
      ctx.addIssue({ code: 'custom', path: ['LOCK_DURATION_MS'], message: 'must be more than half of STALLED_INTERVAL_MS' });
    }
  });

export type Env = z.output<typeof envSchema>;
