import type { ApprovalBinding } from './approval-binding.js';
import type OpenAI from 'openai';
import type { Tool } from '../tools/types.js';

export type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
export type AssistantMessage = OpenAI.Chat.Completions.ChatCompletionAssistantMessageParam;

export type TerminalState = 'completed' | 'failed' | 'cancelled';

/** Why a run did not complete. Stable strings: they are metrics labels and job failure reasons. */
export type FailureReason =
  | 'step_limit'
  | 'context_budget'
  | 'model_error'
  | 'incomplete_turn'
  | 'empty_answer'
  | 'cancelled'
  | 'worker_crashed'
  | 'run_timeout'
  /** The requester's daily model-token budget is used up (USER_DAILY_TOKENS). */
  | 'budget';

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface RunOutcome {
  state: TerminalState;
  /** Set unless state is 'completed'. */
  reason?: FailureReason;
  /** Human detail for logs and the dashboard (e.g. the model's last error). */
  detail?: string;
  /** The final answer text; set only when state is 'completed'. */
  answer?: string;
  /** Steps taken: one per model call counted against limits.maxSteps (retries not counted). */
  steps: number;
  /** Model requests actually sent, retries included. */
  modelCalls: number;
  toolCalls: number;
  usage: TokenUsage;
  /**
   * The messages this run added to the conversation, in order: the user message(s), then
   * assistant (with tool_calls) → tool results … → final assistant. Never includes the system prompt.
   */
  transcript: ChatMessage[];
}

/**
 * Events the loop emits while it works; delivery and job logs subscribe. `replayed`: the step
 * was read back from the journal of an earlier run of this turn, not done again (progress shows
 * it, counters do not count it twice).
 */
export type AgentEvent =
  | { type: 'model_call'; step: number; replayed?: true }
  /** The model's visible words that came with tool calls ("Let me look at the notes…"). */
  | { type: 'narration'; step: number; text: string; replayed?: true }
  /** The text of the step's model response so far, as it streams in (all of it, not the new part; a retried call starts again). */
  | { type: 'answer_text'; step: number; text: string }
  | { type: 'tool_start'; step: number; callId: string; name: string; args: string; replayed?: true }
  | { type: 'tool_end'; step: number; callId: string; name: string; ok: boolean; summary: string; ms: number; replayed?: true }
  | { type: 'model_retry'; step: number; attempt: number; delayMs: number; error: string }
  /** The loop told the model it repeated itself or answered nothing (once per kind per run). */
  | { type: 'nudge'; step: number; reason: 'repeat' | 'empty' }
  /** The final answer; emitted only when the run completed, right before 'end'. */
  | { type: 'final'; text: string }
  | { type: 'end'; outcome: RunOutcome };

export interface AgentLimits {
  /** Model calls allowed in one run (default 20). */
  maxSteps: number;
  /** Budget for the estimated prompt size of one model call, in tokens. */
  maxContextTokens: number;
  /** Retries of one model call on 429/5xx/timeouts/network errors. */
  modelRetries: number;
  /** Cap for one backoff delay, ms (Retry-After above it is clamped). */
  maxRetryDelayMs: number;
  /** A tool call still running after this long becomes an error result (unset: no deadline). */
  toolTimeoutMs?: number;
}

/**
 * What the loop writes ahead into the turn's journal: each model response as received, each
 * tool call before it starts, and its result after. A run that takes the turn over replays
 * these instead of asking the model again or running a tool again.
 */
export type StepRecord =
  | { t: 'model'; step: number /** requests it took, retries included */; calls: number; response: Pick<ModelResponse, 'message' | 'stopReason' | 'usage'> }
  | { t: 'tool_start'; step: number; callId: string; name: string; args: string /** the tool only reads */; readOnly?: true }
  | { t: 'tool_end'; step: number; callId: string; name: string; ok: boolean; content: string; summary: string; ms: number }
  /** A person's decision on a call that needed approval (expired: nobody decided in time, which counts as a deny). */
  | ({ t: 'approval'; decision: ApprovalDecision; by?: string; at: number } & ApprovalBinding);

export type ApprovalDecision = 'approved' | 'denied' | 'expired';

/** A tool call waiting for a person's click: what the approval card shows. */
export interface ApprovalRequest {
  step: number;
  callId: string;
  name: string;
  args: string;
}

/**
 * The turn's step journal as the loop sees it (the queue keeps it in Redis under the session
 * fence). `flush` must complete before a side effect: the loop calls it before each tool call
 * and each model call. It rejects with a RunSuspended when the run no longer owns its turn.
 */
export interface StepJournal {
  /** What earlier runs of this turn recorded, oldest first. */
  readonly recorded: readonly StepRecord[];
  /** Buffers a record for the next flush. */
  record(entry: StepRecord): void;
  flush(): Promise<void>;
}

/** The loop's dependencies. It knows nothing of channels, queues or Redis. */
export interface AgentRunInput {
  model: ModelClient;
  tools: readonly Tool[];
  system: string;
  /** Earlier turns of this session, oldest first (already bounded by the caller). */
  history: readonly ChatMessage[];
  /** The new user message(s) of this turn. */
  input: readonly ChatMessage[];
  limits: AgentLimits;
  signal: AbortSignal;
  /** Aborted when the run should stop at its next step boundary and be resumed elsewhere (shutdown). */
  suspend?: AbortSignal;
  journal?: StepJournal;
  /** The tool waits for a person's approval before it runs (the policy of this conversation). */
  needsApproval?: (tool: string) => boolean;
  /** Nobody can approve in this run (a scheduled turn): a call that needs approval is refused at once, the model reading why. */
  unattended?: string;
  /** The requester's model-token allowance; without it, model calls are not limited by person. */
  budget?: TokenAllowance;
  onEvent?: (event: AgentEvent) => void;
}

/**
 * A person's model-token allowance as the loop sees it. Before each fresh model call (a response
 * replayed from the journal costs nothing) the caller reserves the prompt's estimate, atomically
 * with everyone else's calls: a call whose estimate alone would go over what is left is refused.
 * After the call it settles: the reservation is replaced by what the call used (its reported
 * usage, or the estimate of prompt and answer when the endpoint reported none; 0 releases it).
 * Neither method throws: a store that cannot answer is its owner's to log.
 */
export interface TokenAllowance {
  reserve(estimate: number): Promise<{ ok: true; reservation: TokenReservation } | { ok: false /** for logs and the dashboard */; detail: string }>;
  settle(reservation: TokenReservation, tokens: number): Promise<void>;
}

/** Tokens held for one model call until it is settled (settle each reservation once). */
export interface TokenReservation {
  readonly tokens: number;
}

export type StopReason = 'stop' | 'length' | 'toolUse' | 'error' | 'aborted';

/** One model response. `complete` never throws: failures are data (stopReason 'error'). */
export interface ModelResponse {
  message: AssistantMessage;
  stopReason: StopReason;
  usage: TokenUsage;
  /** For stopReason 'error': what went wrong, and whether retrying may help. */
  error?: { message: string; retryable: boolean; retryAfterMs?: number };
}

export interface ModelRequest {
  messages: ChatMessage[];
  tools: OpenAI.Chat.Completions.ChatCompletionTool[];
  signal: AbortSignal;
  /** A streaming client calls it with the response text so far each time more arrives. */
  onText?: (text: string) => void;
}

export interface ModelClient {
  readonly name: string;
  complete(request: ModelRequest): Promise<ModelResponse>;
}
