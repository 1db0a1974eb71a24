import type { AgentEvent, AgentRunInput, ChatMessage, FailureReason, RunOutcome, TerminalState, TokenUsage } from './types.js';
import { Replay } from './replay.js';

/** The loop's mutable state for one run; only the phases in this folder touch it. */
export interface RunState {
  readonly input: AgentRunInput;
  /** What the model sees: system + history + transcript, plus nudges (which are not transcript). */
  readonly messages: ChatMessage[];
  /** What the run adds to the conversation: the input, then assistant/tool messages. */
  readonly transcript: ChatMessage[];
  steps: number;
  modelCalls: number;
  toolCalls: number;
  usage: TokenUsage;
  /** One nudge of each kind per run. */
  nudged: { repeat: boolean; empty: boolean };
  /** What earlier runs of this turn already did. */
  readonly replay: Replay;
}

export function createRunState(input: AgentRunInput): RunState {
  const transcript = [...input.input];
  return {
    input,
    messages: [{ role: 'system', content: input.system }, ...input.history, ...transcript],
    transcript,
    steps: 0,
    modelCalls: 0,
    toolCalls: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    nudged: { repeat: false, empty: false },
    replay: new Replay(input.journal?.recorded),
  };
}

/** Adds a message to both the model's view and the transcript. */
export function append(state: RunState, message: ChatMessage): void {
  state.messages.push(message);
  state.transcript.push(message);
}

/** A loop-control message: the model sees it for the rest of the run; history never stores it. */
export function appendNudge(state: RunState, text: string): void {
  state.messages.push({ role: 'user', content: text });
}

export function addUsage(state: RunState, usage: TokenUsage): void {
  state.usage.promptTokens += usage.promptTokens;
  state.usage.completionTokens += usage.completionTokens;
  state.usage.totalTokens += usage.totalTokens;
}

/** A listener's failure (sync throw or rejected promise) must never break the run. */
export function emit(state: RunState, event: AgentEvent): void {
  const listener = state.input.onEvent;
  if (!listener) return;
  try {
    const result: unknown = listener(event);
    if (result && typeof (result as PromiseLike<unknown>).then === 'function') {
      (result as Promise<unknown>).then(undefined, () => undefined);
    }
  } catch {
    // Ignored on purpose: delivery problems are delivery's to report.
  }
}

export function outcomeOf(state: RunState, terminal: TerminalState, extra: { reason?: FailureReason; detail?: string; answer?: string } = {}): RunOutcome {
  return {
    state: terminal,
    ...extra,
    steps: state.steps,
    modelCalls: state.modelCalls,
    toolCalls: state.toolCalls,
    usage: { ...state.usage },
    transcript: [...state.transcript],
  };
}
