import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { AgentRuntimes } from './agent-runtime.js';
import type { MemoryOwner, MemoryStore } from '../memory/store.js';
import type { Identities } from '../memory/identity.js';
import type { MemoryEntry } from '../memory/entry.js';
import type { Embedder } from '../memory/embeddings.js';
import type { InboundMessage, OutboundAdapter } from '../channels/types.js';
import type { Logger } from '../log.js';
import type { TokenBudget } from '../access/token-budget.js';
import type { Metrics } from '../metrics/metrics.js';
import type { ActiveRuns } from './active-runs.js';
import type { RunJobData, RunResult } from '../queue/job-data.js';
import type { SessionKeys } from '../queue/keys.js';
import type { RunStore } from './record.js';
import type { RunQueue } from '../queue/run-queue.js';
import type { SessionStore } from '../session/store.js';
import type { ApprovalDesk } from '../approvals/desk.js';
import type { ExecOptions } from '../tools/sandbox.js';
import type { Tool } from '../tools/types.js';
import type { Workspace } from '../tools/workspace.js';
import type { ScheduleBook } from '../schedules/schedule-book.js';
import type { JobTrace } from './job-trace.js';

/** What every run of a worker shares, in groups: the queue and Redis, then one group per phase that needs it. */
export interface RunDeps {
  redis: Redis;
  queue: RunQueue;
  keys: SessionKeys;
  foldMax: number;
  /** schedule_task and friends, and what a scheduled turn's end does to its schedule; absent: no schedules. */
  schedules?: {
    book: ScheduleBook;
    defaultTz: string | undefined;
    approvers: readonly string[] /** the tools are offered (SCHEDULES_PER_USER > 0) */;
    offered: boolean;
  };
  active: ActiveRuns;
  log: Logger;
  metrics?: Metrics;
  runs: RunStore;
  /** The agents (AGENTS_CONFIG, or the one from the environment): each session's prompt, model, limits, tools and skills. */
  agents: AgentRuntimes;
  /** MEMORY: each person's memory (absent or `off`: none; an agent's `memory:` overrides the mode). */
  memory?: {
    store: MemoryStore;
    /** EMBEDDINGS_MODEL: recall and the memory block also rank by meaning. */
    embedder?: Embedder;
    identities: Identities;
    mode: 'person' | 'person+channel' | 'off';
    promptTokens: number;
    /** Shows the person a derived entry to Keep or Discard (a card where the platform has buttons; the run does not wait). */
    askToKeep?: (out: OutboundAdapter, to: InboundMessage, entry: MemoryEntry, who: MemoryOwner) => Promise<void>;
  };
  /** What every agent's runs share: the time and token budgets. */
  agent: {
    /** USER_DAILY_TOKENS: the requester's model tokens per UTC day (unset: no limit). */
    tokenBudget?: TokenBudget;
    /** A turn still running this long after it first started ends failed (run_timeout), resumes included. */
    runTimeoutMs: number;
  };
  /** How a message becomes the turn's input: the workspace, attachments, images, long texts. */
  input: {
    workspaceRoot: string;
    attachmentMaxBytes: number;
    /** MODEL_VISION: image attachments up to this size are shown to the model as pictures; absent: paths only. */
    vision?: { imageMaxBytes: number };
    /** A longer message text is saved in the workspace and the model reads its beginning and where it is. */
    messageMaxChars: number;
  };
  /** What the agent may do and who decides: the tool policy, the sandbox, MCP tools, the approval desk. */
  tools: {
    approvals: ApprovalDesk;
    /** How long a call waits for a decision; then it counts as denied. */
    approvalTimeoutMs: number;
    /** run_command is offered (TOOLS_EXEC on or approve) with these options. */
    exec?: ExecOptions;
    /** Tools from elsewhere (MCP servers) for a session's workspace, as they are right now; `servers`: only these (an agent's mcpServers). */
    extraTools?: (workspace: Workspace, platform: string, servers?: readonly string[]) => Tool[];
  };
  /** Where and how the answer goes out. */
  delivery: {
    /** STREAM_ANSWERS: the answer is shown while the model writes it, where the platform can. */
    streamAnswers?: boolean;
    /** STATUS_AFTER_MS: the status message is posted once the run has worked this long (absent: at once). */
    statusAfterMs?: number;
    outbound: (platform: string) => OutboundAdapter;
  };
}

/** One run of one job: who it is, its fenced store and its logger. Every phase takes it. */
export interface RunContext {
  deps: RunDeps;
  job: Job<RunJobData, RunResult>;
  jobId: string;
  token: string;
  session: string;
  runId: string;
  started: number;
  store: SessionStore;
  log: Logger;
  /** The job's log rows, display data and progress for the dashboard, written behind the run. */
  trace: JobTrace;
  /** BullMQ's abort signal of the job (worker.cancelJob). */
  signal?: AbortSignal;
}
