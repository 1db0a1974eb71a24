import { withoutImages } from '../agent/history.js';
import type { Redis } from 'ioredis';
import type { AgentEvent, ChatMessage, RunOutcome } from '../agent/types.js';
import type { RunResult } from '../queue/job-data.js';
import type { InboundMessage } from '../channels/types.js';
import type { JournalEntry } from '../session/journal.js';
import { RedisKeys } from '../queue/keys.js';

/** One line of a run's timeline: what happened, when (ms after the run started). */
export interface TimelineEntry {
  ms: number;
  type: AgentEvent['type'];
  step?: number;
  tool?: string;
  ok?: boolean;
  /** How long a tool call took. */
  durationMs?: number;
  text?: string;
  /** Read back from the journal of an earlier run of the turn, not done again. */
  replayed?: true;
}

/** Everything an operator needs to see why a run ended as it did: the run's result (less its duration) with what led to it. */
export interface RunRecord extends Omit<RunResult, 'ms' | 'messageIds' | 'state'> {
  v: 1;
  jobId: string;
  startedAt: number;
  endedAt: number;
  state: RunOutcome['state'];
  messages: InboundMessage[];
  transcript: ChatMessage[];
  timeline: TimelineEntry[];
  /** The turn's step journal and the reply's delivery journal, as this run saw and wrote them. */
  journal?: JournalEntry[];
}

/** Run records are kept as long as failed jobs. */
const RECORD_TTL_SECONDS = 14 * 24 * 3600;
/** A tool result longer than this is cut in the record (the model saw it whole). */
const RECORD_TOOL_CHARS = 20_000;

export function timelineEntry(event: AgentEvent, ms: number): TimelineEntry | null {
  const entry = eventEntry(event, ms);
  return entry && 'replayed' in event && event.replayed ? { ...entry, replayed: true } : entry;
}

function eventEntry(event: AgentEvent, ms: number): TimelineEntry | null {
  switch (event.type) {
    // Streamed text arrives many times a second: the response it ends in has its own line.
    case 'answer_text':
      return null;
    case 'model_call':
      return { ms, type: event.type, step: event.step };
    case 'narration':
      return { ms, type: event.type, step: event.step, text: event.text };
    case 'tool_start':
      return { ms, type: event.type, step: event.step, tool: event.name };
    case 'tool_end':
      return { ms, type: event.type, step: event.step, tool: event.name, ok: event.ok, durationMs: event.ms, text: event.summary };
    case 'model_retry':
      return { ms, type: event.type, step: event.step, text: `retry ${event.attempt} in ${event.delayMs} ms: ${event.error}` };
    case 'nudge':
      return { ms, type: event.type, step: event.step, text: event.reason };
    case 'final':
    case 'end':
      return null;
  }
}

export function recordTranscript(transcript: readonly ChatMessage[]): ChatMessage[] {
  return transcript.map((m) =>
    m.role === 'tool' && typeof m.content === 'string' && m.content.length > RECORD_TOOL_CHARS
      ? { ...m, content: `${m.content.slice(0, RECORD_TOOL_CHARS)}\n[cut in the run record at ${RECORD_TOOL_CHARS} characters]` }
      : withoutImages(m),
  );
}

export class RunStore {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = new RedisKeys(prefix);
  }

  private key(runId: string): string {
    return this.keys.run(runId);
  }

  async save(record: RunRecord): Promise<void> {
    await this.redis.set(this.key(record.runId), JSON.stringify(record), 'EX', RECORD_TTL_SECONDS);
  }

  async get(runId: string): Promise<RunRecord | null> {
    const raw = await this.redis.get(this.key(runId));
    return raw === null ? null : (JSON.parse(raw) as RunRecord);
  }
}

/** The run view's path for a run id (linked from the dashboard's job page). */
export const runViewPath = (runId: string) => `/admin/runs/${encodeURIComponent(runId)}`;
