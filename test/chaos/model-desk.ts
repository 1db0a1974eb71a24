import type { ChatMessage } from '../../src/agent/types.js';
import type { FakeOpenAI } from '../fakes/openai-server.js';
import { currentTurn, journalStep, linesOf } from './model.js';

export interface ModelCall {
  /** The session key the call's tokens belong to ('' when it had none). */
  session: string;
  tokens: string[];
  at: number;
  /** When the answer is due (the model's latency). */
  due: number;
  /** When the answer was written back; unset while in flight. */
  answeredAt?: number;
  /** The lines its edit_file call appends, when it answered with one. */
  appends?: string[];
}

/**
 * Serves the scripted journal model on a fake OpenAI endpoint with a latency of its own, records
 * every call (so the kill scheduler can see which are in flight), and tells a listener right
 * after a tool-call answer has been written back to the worker.
 */
export class ModelDesk {
  readonly calls: ModelCall[] = [];
  /** Called just after an edit_file call was written back (the worker is about to run it). */
  onToolCall: ((call: ModelCall) => void) | undefined;

  constructor(
    fake: FakeOpenAI,
    private readonly sessionOf: (token: string) => string | undefined,
    latencyMs: () => number,
  ) {
    fake.setHandler(async (req) => {
      const turn = currentTurn(req.body.messages as ChatMessage[]);
      const at = Date.now();
      const delay = latencyMs();
      const call: ModelCall = { session: this.sessionOf(turn.tokens[0] ?? '') ?? '', tokens: turn.tokens, at, due: at + delay };
      this.calls.push(call);
      // The latency is waited here rather than by the fake's delayMs, so that the moment this
      // handler returns is the moment the answer goes out.
      await new Promise((r) => setTimeout(r, delay));
      const step = journalStep(turn);
      call.answeredAt = Date.now();
      const edit = step.toolCalls?.find((c) => c.name === 'edit_file');
      if (edit) {
        call.appends = linesOf(edit.arguments);
        // A timer runs after the fake has written the response that follows this return.
        setTimeout(() => this.onToolCall?.(call), 0);
      }
      return step;
    });
  }

  inFlight(now = Date.now()): ModelCall[] {
    return this.calls.filter((c) => c.answeredAt === undefined && c.due > now);
  }

  /** Whether the session sent the model another request in (from, to]: its run went on past a tool call. */
  calledBetween(session: string, from: number, to: number): boolean {
    return this.calls.some((c) => c.session === session && c.at > from && c.at <= to);
  }

  lastCallAt(): number {
    return this.calls.at(-1)?.at ?? 0;
  }
}
