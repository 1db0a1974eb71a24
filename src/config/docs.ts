import type { Env } from './schema.js';

/**
 * The README's configuration table, as data: one entry per environment variable, in the table's
 * order. `npm run docs:config` (scripts/config-table.ts) writes the table (config-table.ts renders
 * it) between README.md's config-table markers, and test/config/readme-table.test.ts fails when
 * README.md differs.
 *
 * The type forces an entry for every key of envSchema (tsc refuses a new variable without one) and
 * refuses an entry for a name the schema does not have, unless OUTSIDE_SCHEMA lists it.
 */

/**
 * Variables the product reads from process.env itself, not through envSchema, documented all the same.
 *
 * SWITCHBOARD_CHAT_UNTAKEN_MS: src/cli/chat.ts, `Number(v) || UNTAKEN_AFTER_MS`. In envSchema it would
 * be validated at every role's start-up (a bad value would stop a gateway, where today it is ignored).
 */
export const OUTSIDE_SCHEMA = ['SWITCHBOARD_CHAT_UNTAKEN_MS'] as const;

export type DocKey = keyof Env | (typeof OUTSIDE_SCHEMA)[number];

export type VariableDoc =
  | {
      /** The "meaning" column (Markdown, one line; a `|` is escaped). */
      meaning: string;
      /** The "default" column, as people read it: "`900000` (15 min)", "off", "OpenAI's", "none". */
      default: string;
      /** Variables that share this row, named after this one (each has `{ sameRowAs: <this one> }`). */
      also?: readonly DocKey[];
      /** How the row names them: `A`, `B` (each alike, the default) or `A` + `B` (set together). */
      join?: ',' | '+';
    }
  | { sameRowAs: DocKey };

export const CONFIG_DOCS: Record<DocKey, VariableDoc> = {
  REDIS_URL: {
    meaning: 'Redis for BullMQ and session state: `redis://`, `rediss://`, or `redis+cluster://host:port` (a seed node of a Redis Cluster)',
    default: '`redis://127.0.0.1:6379`',
  },
  OPENAI_API_KEY: {
    meaning: 'key for the model endpoint; a worker needs it unless `OPENAI_BASE_URL` is set',
    default: '—',
  },
  OPENAI_BASE_URL: {
    meaning: 'any OpenAI-compatible `/v1` endpoint',
    default: "OpenAI's",
  },
  AGENT_MODEL: {
    meaning: 'model name',
    default: '`gpt-4.1-mini`',
  },
  MODEL_STREAM: {
    meaning: '`1` to use streaming responses even with `STREAM_ANSWERS=0`',
    default: '`0`',
  },
  STREAM_ANSWERS: {
    meaning: '`1`: the answer is shown while the model writes it (edited in place, see [Live answers](#live-answers)); `0`: the whole answer at once',
    default: '`1`',
  },
  STATUS_AFTER_MS: {
    meaning:
      'how long a run works before its status message (the narration and tool lines) is posted; a run that answers sooner posts only the answer, with the typing indicator meanwhile. `0`: at the first line',
    default: '`1000`',
  },
  LINK_PREVIEWS: {
    meaning:
      "`1`: links in answers may get the platform's preview (Telegram link preview, Slack unfurl, Discord embed); `0`: every message is sent and edited with previews off, since the platform fetches a previewed link without a click (see [Security model](#security-model)). Status lines and approval cards never preview",
    default: '`0`',
  },
  MODEL_VISION: {
    meaning: '`1`: image attachments (png, jpeg, webp, gif) go to the model as image parts; `0`: the model reads their workspace path only',
    default: '`0`',
  },
  IMAGE_MAX_BYTES: {
    meaning: 'largest image shown to the model as a picture (a larger one is named, not shown; it stays in the workspace)',
    default: '`5000000`',
  },
  MODEL_TIMEOUT_MS: {
    meaning: "one model call's deadline (streaming: the longest silence)",
    default: '`120000`',
  },
  WORKSPACE_ROOT: {
    meaning: 'folder holding one workspace per session',
    default: '`./data/workspaces`',
  },
  PORT: {
    meaning: 'HTTP server of the gateway (`/healthz`, `/readyz`; later Slack events, Telegram webhook, dashboard)',
    default: '`3000`',
  },
  ADMIN_TOKEN: {
    meaning: 'guards the dashboard, run view, admin API and metrics (at least 12 characters); without it they refuse',
    default: 'unset',
  },
  ADMIN_READONLY: {
    meaning: '`1`: viewers only — the dashboard hides retry/remove/clean and the admin API refuses changes',
    default: '`0`',
  },
  METRICS_PUBLIC: {
    meaning: '`1`: serve `/metrics` without the admin token',
    default: '`0`',
  },
  TRUST_PROXY: {
    meaning:
      "which reverse proxies to believe about the client (express `trust proxy`): `0` ignores `X-Forwarded-For`/`-Proto`/`-Host`; a number of proxy hops (`1`: one proxy in front); or a comma list of proxy addresses/subnets (`loopback,10.0.0.0/8`). It decides the address the admin limiter counts and whether the login cookie is `Secure`; set it behind a proxy, or every client shares the proxy's address",
    default: '`0`',
  },
  WORKER_METRICS_PORT: {
    meaning: 'a worker-only process (`npm run worker`) serves `/healthz` and its own `/metrics` on this port',
    default: 'off',
  },
  ATTACHMENT_MAX_BYTES: {
    meaning: 'largest file a channel downloads into a workspace, and largest image, audio clip or resource an MCP tool result saves',
    default: '`20000000`',
  },
  LOG_LEVEL: {
    meaning: '`fatal` … `trace`, `silent` (`npm run chat` defaults to `warn`)',
    default: '`info`',
  },
  SWITCHBOARD_CHAT_UNTAKEN_MS: {
    meaning:
      '`npm run chat` only: how long a message it queued may wait for a worker before the chat says that none has taken it and what to check (it keeps waiting); `0` or not a number: the default. Read by the chat itself, not checked at start-up; the tests shorten it',
    default: '`10000` (10 s)',
  },
  WORKER_CONCURRENCY: {
    meaning: 'runs one worker process executes at once (different sessions)',
    default: '`8`',
  },
  AGENT_MAX_STEPS: {
    meaning: 'model calls allowed in one run',
    default: '`20`',
  },
  AGENT_CONTEXT_TOKENS: {
    meaning: 'budget for one model request (estimated); over it the run fails `context_budget`',
    default: '`100000`',
  },
  AGENT_HISTORY_TOKENS: {
    meaning: 'how much earlier conversation is sent with a new message; past it the older turns are summarised into one note (see [History](#history))',
    default: '`16000`',
  },
  AGENT_MODEL_RETRIES: {
    meaning: 'retries of one model call on 429/5xx/timeouts',
    default: '`4`',
  },
  AGENT_RUN_TIMEOUT_MS: {
    meaning:
      'the longest one turn may take, wall clock from its first start (a resumed turn keeps that start); past it the run ends failed, `run_timeout` (at least `1000`)',
    default: '`900000` (15 min)',
  },
  TOOL_TIMEOUT_MS: {
    meaning: 'one tool call\'s deadline: its signal is aborted and the model reads a "timed out" error result, even if the tool does not stop (at least `100`)',
    default: '`60000`',
  },
  TOOLS_EXEC: {
    meaning: "the `run_command` tool ([Commands](#commands-run_command)): `off`, `approve` (offered, and each call waits for a person's approval), `on`",
    default: '`off`',
  },
  EXEC_SANDBOX: {
    meaning: '`bwrap`: every command in a bubblewrap sandbox; `none`: on the host with no isolation (logged as a warning)',
    default: '`bwrap`',
  },
  EXEC_NETWORK: {
    meaning: '`1`: sandboxed commands may use the network',
    default: '`0`',
  },
  EXEC_MAX_TIMEOUT_S: {
    meaning: 'the longest `timeout_s` a command may have (`1` to `86400`)',
    default: '`600`',
  },
  TOOLS_DENY: {
    meaning: 'tools not offered at all: comma list of `tool` (everywhere) or `platform:tool` (only there), e.g. `write_file,telegram:run_command`',
    default: 'none',
  },
  TOOLS_APPROVE: {
    meaning:
      "tools whose every call waits for a person's click ([Approvals](#tool-policy-and-approvals)), same format; `TOOLS_EXEC=approve` adds `run_command`",
    default: 'none',
  },
  APPROVERS: {
    meaning: 'who may approve for anyone: comma list of `platform:userId` (e.g. `slack:U0123ABC,telegram:42`)',
    default: 'none',
  },
  APPROVAL_BY: {
    meaning:
      "who decides a call's approval: `requester` (the person whose message started the run), `approvers` (only `APPROVERS`: nobody approves their own call), `either`",
    default: '`approvers` when `APPROVERS` is set, else `requester`',
  },
  APPROVAL_TIMEOUT_MS: {
    meaning: 'how long a call waits for a decision; then it counts as denied',
    default: '`600000` (10 min)',
  },
  MCP_CONFIG: {
    meaning: 'a JSON file of MCP servers in the common `mcpServers` format ([MCP tools](#mcp-tools))',
    default: 'none',
  },
  AGENTS_CONFIG: {
    meaning:
      'a YAML (or JSON) file of agent profiles (prompt, model, tools, MCP servers, skills, workspace scope, limits) and the bindings that pick one per conversation ([Agents and skills](#agents-and-skills)); unset: one agent from the environment',
    default: 'none',
  },
  SKILLS_PROMPT_TOKENS: {
    meaning: "the most one agent's skills list (each skill's name and description) may cost in the request; a config over it is refused at start",
    default: '`1500`',
  },
  MEMORY: {
    meaning:
      "what the assistant remembers ([Memory](#memory)): `person` (each person's own, never shown in anyone else's turn), `person+channel` (also a memory everyone in a channel shares), `off`; an agent's `memory:` overrides it",
    default: '`person`',
  },
  MEMORY_MAX_ENTRIES: { meaning: 'entries kept per person (per agent); over it the least recently used go', default: '`500`' },
  MEMORY_PROMPT_TOKENS: { meaning: "the most a turn's prompt carries of the asker's memory (the most relevant entries first)", default: '`400`' },
  EMBEDDINGS_MODEL: {
    meaning:
      'an embeddings model at the model endpoint (`/embeddings`): recall and the memory block rank by meaning as well as by words; a failed embedding falls back to words',
    default: 'off (words only)',
  },
  MEMORY_RETENTION_DAYS: { meaning: 'entries unused this many days are dropped', default: 'kept until forgotten' },
  DM_POLICY: {
    meaning:
      'who may DM the bot on every platform ([Access and limits](#access-and-limits)): `pairing` (an unknown sender gets a code for the operator), `allowlist`, `open`, `disabled`',
    default: '`pairing`',
  },
  TELEGRAM_DM_POLICY: {
    meaning: 'the same for one platform (wins over `DM_POLICY`)',
    default: '`DM_POLICY`',
    also: ['SLACK_DM_POLICY', 'DISCORD_DM_POLICY'],
  },
  SLACK_DM_POLICY: { sameRowAs: 'TELEGRAM_DM_POLICY' },
  DISCORD_DM_POLICY: { sameRowAs: 'TELEGRAM_DM_POLICY' },
  ALLOWED_USERS: {
    meaning:
      'people let in under `pairing` and `allowlist`: comma list of `platform:userId` (Telegram also `telegram:@username`), e.g. `slack:U0123ABC,telegram:42,discord:80351110224678912`',
    default: 'none',
  },
  GROUP_POLICY: {
    meaning:
      'who the bot answers in channels, groups and guilds (it still needs a mention): `pairing` — senders the DM policy lets in (listed, paired, or anyone under `DM_POLICY=open`), plus everyone in an `ALLOWED_CHANNELS` place and members of the installing Slack workspace; `allowlist` — the same, only in `ALLOWED_CHANNELS`; `open` — anyone in any group (warned at start)',
    default: '`pairing`',
  },
  ALLOWED_CHANNELS: {
    meaning: '`slack:C…`, `telegram:-100…`, `discord:<guildId>` or `discord:<channelId>` (a channel covers its threads)',
    default: 'none',
  },
  USER_RATE_LIMIT: {
    meaning: 'messages per minute per person, across all gateways (`0`: no limit); `/stop` is never limited',
    default: '`20`',
  },
  USER_DAILY_TOKENS: {
    meaning:
      "model tokens per person per UTC day. Each model call (history summaries included) first reserves its prompt's estimate, atomically across workers: a call whose estimate does not fit in what is left is refused (the run ends failed, `budget`). After the call the reservation is replaced by the reported usage, or, when the endpoint reports none (many compatible servers omit it, above all when streaming), by the estimate of prompt and answer (a call can still go over by what its answer adds)",
    default: 'no limit',
  },
  SESSION_QUEUE_MAX: {
    meaning: 'messages one conversation may have waiting (the messages of the turn being worked on do not count); the next is refused with a notice',
    default: '`50`',
  },
  MESSAGE_MAX_CHARS: {
    meaning: 'a longer message is saved in full in the workspace (`uploads/`) and the model reads its beginning and where the rest is',
    default: '`20000`',
  },
  SCHEDULE_TZ: {
    meaning: 'the timezone of a schedule when the person names none ([Schedules](#schedules)); without it the model must ask',
    default: 'none',
  },
  SCHEDULES_PER_USER: {
    meaning: 'schedules one person may have at once, paused ones included (`0`: nobody can make new ones; existing ones still fire)',
    default: '`10`',
  },
  SCHEDULE_MIN_INTERVAL_S: {
    meaning: 'the shortest time between two firings of a recurring schedule',
    default: '`60`',
  },
  FOLD_MAX_MESSAGES: {
    meaning: 'waiting messages of one session (and one person) answered together in one turn',
    default: '`10`',
  },
  QUEUE_PREFIX: {
    meaning: 'Redis key prefix, a hash tag so Redis Cluster keeps all keys in one slot',
    default: '`{switchboard}`',
  },
  LOCK_DURATION_MS: {
    meaning: "a run's BullMQ lock; a dead worker's run is resumed by another worker after about this plus one or two stalled checks",
    default: '`30000`',
  },
  STALLED_INTERVAL_MS: {
    meaning: 'how often workers look for runs whose worker died',
    default: '`15000`',
  },
  RECONCILE_INTERVAL_MS: {
    meaning: 'how often workers look for sessions with waiting messages and no run',
    default: '`30000`',
  },
  SHUTDOWN_GRACE_MS: {
    meaning:
      'on SIGTERM/SIGINT, how long active runs may take to reach their next step boundary (and go back to waiting for another worker) before they are left to expire their locks (`0`: no wait); meanwhile the gateway answers new webhook events 503 with `Retry-After` and `/readyz` 503',
    default: '`30000`',
  },
  TELEGRAM_BOT_TOKEN: {
    meaning: 'enables Telegram',
    default: 'off',
  },
  TELEGRAM_ALLOWED_USERS: {
    meaning: 'older form of `ALLOWED_USERS` for Telegram: ids / usernames; when set, Telegram DMs default to `allowlist` and group senders must be listed too',
    default: 'unset',
  },
  TELEGRAM_WEBHOOK_URL: {
    meaning: 'webhook mode instead of long polling; the secret defaults to one derived from the token',
    default: 'polling',
    also: ['TELEGRAM_WEBHOOK_SECRET'],
  },
  TELEGRAM_WEBHOOK_SECRET: { sameRowAs: 'TELEGRAM_WEBHOOK_URL' },
  TELEGRAM_API_ROOT: {
    meaning: 'Bot API root, e.g. a local Bot API server',
    default: "Telegram's",
  },
  TELEGRAM_DRAFTS: {
    meaning:
      '`1`: in private chats a streamed answer is a draft (`sendMessageDraft`) posted as one message once final, instead of edits of a message (off by default: on some clients the draft stayed visible over the final message)',
    default: '`0`',
  },
  SLACK_BOT_TOKEN: {
    meaning: 'enable Slack (HTTP events at `POST /slack/events`)',
    default: 'off',
    also: ['SLACK_SIGNING_SECRET'],
    join: '+',
  },
  SLACK_SIGNING_SECRET: { sameRowAs: 'SLACK_BOT_TOKEN' },
  SLACK_APP_TOKEN: {
    meaning: 'Socket Mode instead of HTTP (then the signing secret is optional)',
    default: 'off',
  },
  SLACK_API_URL: {
    meaning: 'Web API base (GovSlack, a proxy)',
    default: "Slack's",
  },
  SLACK_THREAD_FOLLOWUPS: {
    meaning: '`1`: in a thread the bot answered, later messages count without a new mention',
    default: '`0` (mention required)',
  },
  DISCORD_TOKEN: {
    meaning: 'enable Discord (gateway + slash commands)',
    default: 'off',
    also: ['DISCORD_APPLICATION_ID'],
    join: '+',
  },
  DISCORD_APPLICATION_ID: { sameRowAs: 'DISCORD_TOKEN' },
  DISCORD_GUILD_ID: {
    meaning: 'register slash commands in this server only (instant updates while developing)',
    default: 'global',
  },
  DISCORD_MESSAGE_CONTENT: {
    meaning: '`0`: mention-only mode, without the privileged Message Content intent',
    default: '`1`',
  },
  DISCORD_API_URL: {
    meaning: 'REST base (`rest.api`); the gateway URL then comes from `GET /gateway/bot`',
    default: "Discord's",
  },
};
