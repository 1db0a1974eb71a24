import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { progressLine } from '../../src/run/delivery/progress-lines.js';
import { honestLine } from '../../src/run/delivery/honest-line.js';
import { ProgressReporter } from '../../src/run/delivery/progress.js';
import { deliverReply, type OutboxRecord } from '../../src/run/delivery/reply.js';
import type { WriteFailure } from '../../src/channels/kit/pieces.js';
import type { AgentEvent, FailureReason, RunOutcome } from '../../src/agent/types.js';
import type { DeliveredOutcome, InboundMessage, OutboundAdapter, PostKind } from '../../src/channels/types.js';
import type { Logger } from '../../src/log.js';

const TO: InboundMessage = {
  v: 1,
  id: 'm-1',
  platform: 'fake',
  conversation: 'c1',
  sender: { id: 'u1' },
  text: 'do the thing',
  attachments: [],
  eventId: 'e-1',
  receivedAt: 0,
};

/** A pino logger whose lines are kept in memory, so tests can see what was logged. */
function memoryLogger(): { log: Logger; lines: () => Array<{ level: number; msg: string }> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  const log = pino({ level: 'debug' }, stream);
  return {
    log,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { level: number; msg: string }),
  };
}

type Call =
  | { op: 'post'; at: number; text: string; kind: PostKind; id: string }
  | { op: 'edit'; at: number; id: string; text: string; ok: boolean }
  | { op: 'remove'; at: number; id: string }
  | { op: 'typing'; at: number }
  | { op: 'progress'; at: number; line: string }
  | { op: 'ended'; at: number; outcome: DeliveredOutcome };

/** An in-memory outbound adapter that records every call with the (fake) time it was made. */
class FakeOutbound implements OutboundAdapter {
  readonly platform = 'fake';
  readonly calls: Call[] = [];
  /** How many of the next edits throw. */
  failEdits = 0;
  /** How long post and edit take to resolve (fake time). */
  writeDelayMs = 0;
  private next = 0;

  constructor(
    readonly editIntervalMs: number,
    readonly typingIntervalMs?: number,
  ) {}

  private async delay(): Promise<void> {
    if (this.writeDelayMs > 0) await new Promise((r) => setTimeout(r, this.writeDelayMs));
  }

  async post(to: InboundMessage, text: string, kind: PostKind): Promise<string[]> {
    expect(to).toBe(TO);
    const id = `msg-${++this.next}`;
    this.calls.push({ op: 'post', at: Date.now(), text, kind, id });
    await this.delay();
    return [id];
  }

  /** Errors whose message says "refused" are refusals for good; anything else may be retried. */
  classifyWriteError(err: unknown): WriteFailure {
    return err instanceof Error && err.message.includes('refused') ? 'refused' : 'retry';
  }

  async edit(to: InboundMessage, messageId: string, text: string): Promise<void> {
    expect(to).toBe(TO);
    const ok = this.failEdits === 0;
    if (!ok) this.failEdits -= 1;
    this.calls.push({ op: 'edit', at: Date.now(), id: messageId, text, ok });
    await this.delay();
    if (!ok) throw new Error('429 Too Many Requests');
  }

  async typing(to: InboundMessage): Promise<void> {
    expect(to).toBe(TO);
    this.calls.push({ op: 'typing', at: Date.now() });
  }

  writes(): Array<Extract<Call, { op: 'post' | 'edit' }>> {
    return this.calls.filter((c): c is Extract<Call, { op: 'post' | 'edit' }> => c.op === 'post' || c.op === 'edit');
  }
  typings(): number[] {
    return this.calls.filter((c) => c.op === 'typing').map((c) => c.at);
  }
}

class NativeProgressOutbound extends FakeOutbound {
  async progress(to: InboundMessage, line: string): Promise<void> {
    expect(to).toBe(TO);
    this.calls.push({ op: 'progress', at: Date.now(), line });
  }
}

const T0 = 1_000_000;
const EDIT = 1_000;
const TYPING = 3_000;

const narration = (text: string): AgentEvent => ({ type: 'narration', step: 1, text });
const toolEnd = (summary: string, ok = true): AgentEvent => ({ type: 'tool_end', step: 1, callId: 'c', name: 'read_file', ok, summary, ms: 3 });

const outcome = (): RunOutcome => ({
  state: 'completed',
  answer: 'done',
  steps: 1,
  modelCalls: 1,
  toolCalls: 0,
  usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
  transcript: [],
});

describe('progressLine', () => {
  it('shows narration as one trimmed line', () => {
    expect(progressLine(narration('  Let me look at the notes.  '))).toBe('Let me look at the notes.');
    expect(progressLine(narration('First I will list the files,\n\n   then read\n the README.'))).toBe('First I will list the files, then read the README.');
  });

  it('clips long narration to 300 characters ending in …', () => {
    const line = progressLine(narration('x'.repeat(1000)));
    expect(line).toBe(`${'x'.repeat(299)}…`);
    expect(line).toHaveLength(300);
    expect(progressLine(narration('y'.repeat(300)))).toBe('y'.repeat(300));
  });

  it('shows nothing for empty narration', () => {
    expect(progressLine(narration(''))).toBeNull();
    expect(progressLine(narration(' \n\t '))).toBeNull();
  });

  it('marks tool results ok with • and failures with ✗', () => {
    expect(progressLine(toolEnd('read notes.txt (12 lines)'))).toBe('• read notes.txt (12 lines)');
    expect(progressLine(toolEnd('read missing.txt: not found', false))).toBe('✗ read missing.txt: not found');
    expect(progressLine(toolEnd('a\nb'))).toBe('• a b');
  });

  it('tells the user the model is being retried, in whole seconds (at least 1)', () => {
    expect(progressLine({ type: 'model_retry', step: 2, attempt: 1, delayMs: 4_400, error: '429' })).toBe('• the model is busy; retrying in 4 s');
    expect(progressLine({ type: 'model_retry', step: 2, attempt: 1, delayMs: 200, error: '503' })).toBe('• the model is busy; retrying in 1 s');
  });

  it('shows nothing for the other events', () => {
    const others: AgentEvent[] = [
      { type: 'model_call', step: 1 },
      { type: 'tool_start', step: 1, callId: 'c', name: 'read_file', args: '{"path":"secret.txt"}' },
      { type: 'nudge', step: 1, reason: 'repeat' },
      { type: 'final', text: 'the answer' },
      { type: 'end', outcome: outcome() },
    ];
    for (const e of others) expect(progressLine(e)).toBeNull();
  });
});

describe('honestLine', () => {
  const REASONS: FailureReason[] = [
    'step_limit',
    'context_budget',
    'model_error',
    'incomplete_turn',
    'empty_answer',
    'cancelled',
    'worker_crashed',
    'run_timeout',
    'budget',
  ];

  it('has a distinct, non-empty, single line for every failure reason', () => {
    const lines = REASONS.map((r) => honestLine(r, { maxSteps: 20 }));
    for (const l of lines) {
      expect(l.trim().length).toBeGreaterThan(0);
      expect(l).not.toContain('\n');
    }
    expect(new Set(lines).size).toBe(REASONS.length);
    // None of them is the fallback for an unknown reason.
    expect(lines).not.toContain(honestLine(undefined));
  });

  it('step_limit mentions the number of steps', () => {
    expect(honestLine('step_limit', { maxSteps: 20 })).toContain('I stopped after 20 steps without finishing');
    expect(honestLine('step_limit', { maxSteps: 7 })).toContain('after 7 steps');
    expect(honestLine('step_limit')).toContain('the maximum number of steps');
  });

  it('worker_crashed says what was already done, and asks for a resend only when nothing was', () => {
    const done = honestLine('worker_crashed', { done: ['edit_file log.txt → Edited log.txt at line 3', 'write_file out.md started, outcome unknown'] });
    expect(done).toContain('Already done: edit_file log.txt → Edited log.txt at line 3; write_file out.md started, outcome unknown.');
    expect(done).not.toMatch(/send it again/);
    expect(honestLine('worker_crashed')).toMatch(/before doing anything.*Please send it again/);
  });

  it('run_timeout names the limit', () => {
    expect(honestLine('run_timeout', { runTimeoutMs: 15 * 60_000 })).toContain('longer than the 15-minute limit');
    expect(honestLine('run_timeout', { runTimeoutMs: 1_500 })).toContain('longer than the 2-second limit');
  });

  it('says something when the reason is unknown', () => {
    expect(honestLine(undefined)).toBe('The run failed for an unknown reason.');
  });
});

describe('ProgressReporter', () => {
  let log: ReturnType<typeof memoryLogger>;

  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
    log = memoryLogger();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const reporter = (out: OutboundAdapter) => new ProgressReporter(out, TO, log.log, () => Date.now());

  /** Every two consecutive writes (post or edit) are at least the edit interval apart. */
  const expectSpaced = (out: FakeOutbound) => {
    const at = out.writes().map((w) => w.at);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(EDIT);
  };

  it('posts one status message for the first line', async () => {
    const out = new FakeOutbound(EDIT);
    const r = reporter(out);
    r.start();
    r.onEvent({ type: 'model_call', step: 1 });
    r.onEvent(narration('Let me look at the notes.'));
    await vi.advanceTimersByTimeAsync(0);
    expect(out.calls).toEqual([{ op: 'post', at: T0, text: 'Let me look at the notes.', kind: 'status', id: 'msg-1' }]);
    expect(r.statusMessageId).toBe('msg-1');
    await r.stop();
  });

  it('with a delay, a run that answers sooner posts no status message, and one that works on posts its lines once the delay has passed', async () => {
    const out = new FakeOutbound(EDIT);
    const quick = new ProgressReporter(out, TO, log.log, () => Date.now(), { after: 1_000 });
    quick.onEvent(narration('Reading notes.md.'));
    await vi.advanceTimersByTimeAsync(400);
    await quick.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(out.calls).toEqual([]);

    const slow = new ProgressReporter(out, TO, log.log, () => Date.now(), { after: 1_000 });
    const started = Date.now();
    slow.onEvent(narration('Reading notes.md.'));
    await vi.advanceTimersByTimeAsync(300);
    slow.onEvent(narration('Now the log.'));
    await vi.advanceTimersByTimeAsync(699);
    expect(out.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(out.calls).toEqual([{ op: 'post', at: started + 1_000, text: 'Reading notes.md.\nNow the log.', kind: 'status', id: 'msg-1' }]);
    // After the post, edits keep the interval as always.
    slow.onEvent(narration('Done reading.'));
    await vi.advanceTimersByTimeAsync(EDIT);
    expect(out.calls.map((c) => c.op)).toEqual(['post', 'edit']);
    expectSpaced(out);
    await slow.stop();
  });

  it('a line that comes after the delay is posted at once', async () => {
    const out = new FakeOutbound(EDIT);
    const r = new ProgressReporter(out, TO, log.log, () => Date.now(), { after: 1_000 });
    await vi.advanceTimersByTimeAsync(2_500);
    r.onEvent(narration('Reading notes.md.'));
    await vi.advanceTimersByTimeAsync(0);
    expect(out.calls).toMatchObject([{ op: 'post', at: T0 + 2_500 }]);
    await r.stop();
  });

  it('a resumed run edits the status message its turn already has, and records a new one once it is posted', async () => {
    const out = new FakeOutbound(EDIT);
    const resumed = new ProgressReporter(out, TO, log.log, () => Date.now(), { id: 'msg-earlier' });
    resumed.onEvent(narration('Still on it.'));
    await vi.advanceTimersByTimeAsync(0);
    expect(out.calls).toEqual([{ op: 'edit', at: T0, id: 'msg-earlier', text: 'Still on it.', ok: true }]);
    await resumed.stop();

    const recorded: string[] = [];
    const fresh = new ProgressReporter(out, TO, log.log, () => Date.now(), { record: async (id) => void recorded.push(id) });
    fresh.onEvent(narration('Starting.'));
    await vi.advanceTimersByTimeAsync(0);
    expect(recorded).toEqual(['msg-1']);
    await fresh.stop();
  });

  it('a status message the run may not record (it lost its turn) is taken down, and nothing more is shown', async () => {
    const removed: string[] = [];
    const out = Object.assign(new FakeOutbound(EDIT), { remove: async (_to: InboundMessage, id: string) => void removed.push(id) });
    const r = new ProgressReporter(out, TO, log.log, () => Date.now(), {
      record: async () => {
        throw new Error('journal write refused: another run took the session over');
      },
    });
    r.onEvent(narration('Let me look.'));
    await vi.advanceTimersByTimeAsync(0);
    r.onEvent(narration('And more.'));
    await vi.advanceTimersByTimeAsync(10 * EDIT);
    expect(removed).toEqual(['msg-1']);
    expect(out.calls.map((c) => c.op)).toEqual(['post']);
    await r.stop();
  });

  it('events without a line post nothing', async () => {
    const out = new FakeOutbound(EDIT);
    const r = reporter(out);
    r.onEvent({ type: 'model_call', step: 1 });
    r.onEvent({ type: 'tool_start', step: 1, callId: 'c', name: 'read_file', args: '{}' });
    r.onEvent(narration('   '));
    await vi.advanceTimersByTimeAsync(10 * EDIT);
    expect(out.calls).toEqual([]);
    expect(r.statusMessageId).toBeUndefined();
    await r.stop();
  });

  it('later lines edit the status message at most once per interval, coalescing to the newest text', async () => {
    const out = new FakeOutbound(EDIT);
    const r = reporter(out);
    r.onEvent(narration('Looking.'));
    await vi.advanceTimersByTimeAsync(0);
    expect(out.writes()).toHaveLength(1);

    await vi.advanceTimersByTimeAsync(100);
    r.onEvent(toolEnd('listed 3 files'));
    await vi.advanceTimersByTimeAsync(100);
    r.onEvent(toolEnd('read a.txt'));
    await vi.advanceTimersByTimeAsync(100);
    r.onEvent(toolEnd('read b.txt', false));
    // Still inside the first interval: nothing edited yet.
    await vi.advanceTimersByTimeAsync(EDIT - 301);
    expect(out.writes()).toHaveLength(1);
    // At the end of the interval, exactly one edit with all the lines so far.
    await vi.advanceTimersByTimeAsync(1);
    expect(out.writes()).toEqual([
      { op: 'post', at: T0, text: 'Looking.', kind: 'status', id: 'msg-1' },
      { op: 'edit', at: T0 + EDIT, id: 'msg-1', text: 'Looking.\n• listed 3 files\n• read a.txt\n✗ read b.txt', ok: true },
    ]);

    // A burst right after the edit waits for the next interval, again as one edit.
    r.onEvent(narration('Now writing the summary.'));
    await vi.advanceTimersByTimeAsync(10);
    r.onEvent(toolEnd('wrote summary.md'));
    await vi.advanceTimersByTimeAsync(5 * EDIT);
    const writes = out.writes();
    expect(writes).toHaveLength(3);
    expect(writes[2]).toEqual({
      op: 'edit',
      at: T0 + 2 * EDIT,
      id: 'msg-1',
      text: 'Looking.\n• listed 3 files\n• read a.txt\n✗ read b.txt\nNow writing the summary.\n• wrote summary.md',
      ok: true,
    });
    expectSpaced(out);
    await r.stop();
  });

  it('an event long after the last edit is shown without waiting', async () => {
    const out = new FakeOutbound(EDIT);
    const r = reporter(out);
    r.onEvent(narration('one'));
    await vi.advanceTimersByTimeAsync(5 * EDIT);
    r.onEvent(narration('two'));
    await vi.advanceTimersByTimeAsync(0);
    expect(out.writes().map((w) => [w.op, w.at, w.text])).toEqual([
      ['post', T0, 'one'],
      ['edit', T0 + 5 * EDIT, 'one\ntwo'],
    ]);
    await r.stop();
  });

  it('keeps the newest 8 lines in the status message', async () => {
    const out = new FakeOutbound(EDIT);
    const r = reporter(out);
    for (let i = 1; i <= 10; i++) r.onEvent(narration(`line ${i}`));
    await vi.advanceTimersByTimeAsync(0);
    expect(out.writes()).toHaveLength(1);
    expect(out.writes()[0]!.text).toBe(['line 3', 'line 4', 'line 5', 'line 6', 'line 7', 'line 8', 'line 9', 'line 10'].join('\n'));
    await r.stop();
  });

  it('does not re-send unchanged text', async () => {
    const out = new FakeOutbound(EDIT);
    const r = reporter(out);
    // Eight identical lines fill the window; a ninth identical one leaves the text as it was.
    for (let i = 0; i < 8; i++) r.onEvent(narration('working'));
    await vi.advanceTimersByTimeAsync(0);
    expect(out.writes()).toHaveLength(1);
    r.onEvent(narration('working'));
    await vi.advanceTimersByTimeAsync(3 * EDIT);
    expect(out.writes()).toHaveLength(1);
    // A different line is sent.
    r.onEvent(narration('done working'));
    await vi.advanceTimersByTimeAsync(3 * EDIT);
    expect(out.writes()).toHaveLength(2);
    expect(out.writes()[1]!.text).toBe([...Array<string>(7).fill('working'), 'done working'].join('\n'));
    await r.stop();
  });

  it('swallows a failing edit, logs it, and the next update retries with the full text', async () => {
    const out = new FakeOutbound(EDIT);
    const r = reporter(out);
    r.onEvent(narration('one'));
    await vi.advanceTimersByTimeAsync(0);
    out.failEdits = 1;
    r.onEvent(narration('two'));
    await vi.advanceTimersByTimeAsync(EDIT);
    expect(out.writes().map((w) => (w.op === 'edit' ? [w.text, w.ok] : w.text))).toEqual(['one', ['one\ntwo', false]]);
    expect(log.lines().filter((l) => l.msg === 'progress update failed')).toHaveLength(1);

    r.onEvent(narration('three'));
    await vi.advanceTimersByTimeAsync(EDIT);
    expect(out.writes().map((w) => (w.op === 'edit' ? [w.text, w.ok] : w.text))).toEqual(['one', ['one\ntwo', false], ['one\ntwo\nthree', true]]);
    expect(r.statusMessageId).toBe('msg-1');
    expectSpaced(out);
    await expect(r.stop()).resolves.toBeUndefined();
  });

  it('retries a failed update after the interval even when no new line comes, a few times at most', async () => {
    const out = new FakeOutbound(EDIT);
    const r = reporter(out);
    r.onEvent(narration('one'));
    await vi.advanceTimersByTimeAsync(0);
    out.failEdits = 1;
    r.onEvent(narration('thinking…'));
    await vi.advanceTimersByTimeAsync(EDIT);
    // The model is thinking: no new line, yet the failed text is tried again one interval later.
    await vi.advanceTimersByTimeAsync(EDIT);
    expect(out.writes().map((w) => (w.op === 'edit' ? [w.text, w.ok] : w.text))).toEqual(['one', ['one\nthinking…', false], ['one\nthinking…', true]]);
    expectSpaced(out);

    // An edit that keeps failing is given up after three retries until something new happens.
    out.failEdits = 100;
    r.onEvent(narration('more'));
    await vi.advanceTimersByTimeAsync(20 * EDIT);
    expect(out.writes().filter((w) => w.op === 'edit' && !w.ok)).toHaveLength(1 + 4);
    await r.stop();
  });

  it('a line that arrives while the status message is being posted waits a full interval after it', async () => {
    const out = new FakeOutbound(EDIT);
    out.writeDelayMs = 50;
    const r = reporter(out);
    r.onEvent(narration('one'));
    await vi.advanceTimersByTimeAsync(10);
    r.onEvent(narration('two'));
    await vi.advanceTimersByTimeAsync(5 * EDIT);
    const writes = out.writes();
    expect(writes.map((w) => [w.op, w.text])).toEqual([
      ['post', 'one'],
      ['edit', 'one\ntwo'],
    ]);
    // The post finished at T0 + 50: the edit comes a full interval after it.
    expect(writes[1]!.at).toBe(T0 + 50 + EDIT);
    await r.stop();
  });

  it('a line that arrives while an edit is in flight waits a full interval after it', async () => {
    const out = new FakeOutbound(EDIT);
    out.writeDelayMs = 50;
    const r = reporter(out);
    r.onEvent(narration('one'));
    await vi.advanceTimersByTimeAsync(60);
    r.onEvent(narration('two'));
    // The edit starts at T0 + 50 + EDIT and takes 50 ms; 'three' arrives during it.
    await vi.advanceTimersByTimeAsync(EDIT - 10 + 20);
    expect(out.writes().map((w) => w.text)).toEqual(['one', 'one\ntwo']);
    r.onEvent(narration('three'));
    await vi.advanceTimersByTimeAsync(5 * EDIT);
    expect(out.writes().map((w) => w.text)).toEqual(['one', 'one\ntwo', 'one\ntwo\nthree']);
    expectSpaced(out);
    await r.stop();
  });

  it('refreshes typing on start and every typing interval, and never after stop', async () => {
    const out = new FakeOutbound(EDIT, TYPING);
    const r = reporter(out);
    r.start();
    expect(out.typings()).toEqual([T0]);
    await vi.advanceTimersByTimeAsync(2 * TYPING + 500);
    expect(out.typings()).toEqual([T0, T0 + TYPING, T0 + 2 * TYPING]);
    await r.stop();
    await vi.advanceTimersByTimeAsync(10 * TYPING);
    expect(out.typings()).toEqual([T0, T0 + TYPING, T0 + 2 * TYPING]);
  });

  it('does not show typing when the adapter has no typing interval', async () => {
    const out = new FakeOutbound(EDIT);
    const r = reporter(out);
    r.start();
    await vi.advanceTimersByTimeAsync(10 * TYPING);
    expect(out.typings()).toEqual([]);
    await r.stop();
  });

  it('a failing typing call is logged and does not stop the refresh', async () => {
    const out = new FakeOutbound(EDIT, TYPING);
    let n = 0;
    out.typing = async () => {
      n += 1;
      if (n === 1) throw new Error('typing failed');
    };
    const r = reporter(out);
    r.start();
    await vi.advanceTimersByTimeAsync(TYPING);
    expect(n).toBe(2);
    expect(log.lines().filter((l) => l.msg === 'typing indicator failed')).toHaveLength(1);
    await r.stop();
  });

  it('nothing is posted or edited after stop: a pending edit is dropped and later events are ignored', async () => {
    const out = new FakeOutbound(EDIT, TYPING);
    const r = reporter(out);
    r.start();
    r.onEvent(narration('one'));
    await vi.advanceTimersByTimeAsync(0);
    r.onEvent(narration('two')); // scheduled for T0 + EDIT
    await vi.advanceTimersByTimeAsync(100);
    await r.stop();
    r.onEvent(narration('three'));
    await vi.advanceTimersByTimeAsync(10 * EDIT);
    expect(out.calls.map((c) => c.op)).toEqual(['typing', 'post']);
  });

  it('stop waits for a write in flight', async () => {
    const out = new FakeOutbound(EDIT);
    out.writeDelayMs = 200;
    const r = reporter(out);
    r.onEvent(narration('one'));
    await vi.advanceTimersByTimeAsync(10);
    let stopped = false;
    const stopping = r.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(100);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(100);
    await stopping;
    expect(stopped).toBe(true);
    expect(r.statusMessageId).toBe('msg-1');
    expect(out.writes()).toHaveLength(1);
  });

  it('with a native progress surface: one call per line, in order, and no status message', async () => {
    const out = new NativeProgressOutbound(EDIT, TYPING);
    const r = reporter(out);
    r.start();
    r.onEvent(narration('Looking.'));
    r.onEvent({ type: 'model_call', step: 2 });
    r.onEvent(toolEnd('listed 3 files'));
    r.onEvent(toolEnd('read a.txt', false));
    r.onEvent({ type: 'model_retry', step: 3, attempt: 1, delayMs: 2_000, error: '503' });
    await vi.advanceTimersByTimeAsync(0);
    await r.stop();
    r.onEvent(narration('after stop'));
    await vi.advanceTimersByTimeAsync(10 * EDIT);
    expect(out.calls.filter((c) => c.op === 'progress').map((c) => (c.op === 'progress' ? c.line : ''))).toEqual([
      'Looking.',
      '• listed 3 files',
      '✗ read a.txt',
      '• the model is busy; retrying in 2 s',
    ]);
    expect(out.writes()).toEqual([]);
    expect(r.statusMessageId).toBeUndefined();
  });

  it('a failing native progress call is logged and the next line is still sent', async () => {
    const out = new NativeProgressOutbound(EDIT);
    const seen: string[] = [];
    out.progress = async (_to, line) => {
      seen.push(line);
      if (seen.length === 1) throw new Error('boom');
    };
    const r = reporter(out);
    r.onEvent(narration('one'));
    r.onEvent(narration('two'));
    await r.stop();
    expect(seen).toEqual(['one', 'two']);
    expect(log.lines().filter((l) => l.msg === 'progress update failed')).toHaveLength(1);
  });
});

describe('deliverReply', () => {
  class ReplyOutbound extends FakeOutbound {
    removeFails = false;
    async remove(to: InboundMessage, messageId: string): Promise<void> {
      expect(to).toBe(TO);
      this.calls.push({ op: 'remove', at: Date.now(), id: messageId });
      if (this.removeFails) throw new Error('cannot delete');
    }
    async ended(to: InboundMessage, o: DeliveredOutcome): Promise<void> {
      expect(to).toBe(TO);
      this.calls.push({ op: 'ended', at: Date.now(), outcome: o });
    }
  }

  const record = (extra: Partial<OutboxRecord>): OutboxRecord => ({
    v: 1,
    runId: 'run-1',
    session: 'fake:c1',
    to: TO,
    state: 'completed',
    text: 'Here is the answer.',
    messageIds: ['m-1'],
    ...extra,
  });

  const strip = (calls: Call[]) => calls.map(({ at: _at, ...rest }) => rest);

  it('posts a completed run as an answer, removes the status message, and reports the outcome', async () => {
    const out = new ReplyOutbound(EDIT);
    const report = await deliverReply(out, record({ statusMessageId: 'status-7', messageIds: ['m-1', 'm-2'] }), memoryLogger().log);
    expect(report).toEqual({ posted: ['msg-1'] });
    expect(strip(out.calls)).toEqual([
      { op: 'post', text: 'Here is the answer.', kind: 'answer', id: 'msg-1' },
      { op: 'remove', id: 'status-7' },
      { op: 'ended', outcome: { runId: 'run-1', state: 'completed', messageIds: ['m-1', 'm-2'] } },
    ]);
    const ended = out.calls.find((c) => c.op === 'ended');
    expect(ended && ended.op === 'ended' && 'reason' in ended.outcome).toBe(false);
  });

  it.each([
    ['failed', 'step_limit', 'I stopped after 20 steps without finishing.'],
    ['cancelled', 'cancelled', 'Stopped.'],
  ] as const)('posts a %s run as a notice with its reason', async (state, reason, text) => {
    const out = new ReplyOutbound(EDIT);
    await deliverReply(out, record({ state, reason, text, statusMessageId: 's' }), memoryLogger().log);
    expect(strip(out.calls)).toEqual([
      { op: 'post', text, kind: 'notice', id: 'msg-1' },
      { op: 'remove', id: 's' },
      { op: 'ended', outcome: { runId: 'run-1', state, reason, line: honestLine(reason), messageIds: ['m-1'] } },
    ]);
  });

  it('removes nothing when there was no status message', async () => {
    const out = new ReplyOutbound(EDIT);
    await deliverReply(out, record({}), memoryLogger().log);
    expect(out.calls.map((c) => c.op)).toEqual(['post', 'ended']);
  });

  it('an adapter that cannot remove leaves the status message; one without ended is fine', async () => {
    const out = new FakeOutbound(EDIT);
    const report = await deliverReply(out, record({ statusMessageId: 's', state: 'failed', reason: 'model_error', text: 'x' }), memoryLogger().log);
    expect(report.posted).toEqual(['msg-1']);
    expect(strip(out.calls)).toEqual([{ op: 'post', text: 'x', kind: 'notice', id: 'msg-1' }]);
  });

  it('a failing remove is logged and the outcome is still reported', async () => {
    const out = new ReplyOutbound(EDIT);
    out.removeFails = true;
    const log = memoryLogger();
    await deliverReply(out, record({ statusMessageId: 's' }), log.log);
    expect(out.calls.map((c) => c.op)).toEqual(['post', 'remove', 'ended']);
    expect(log.lines().map((l) => l.msg)).toContain('could not remove the status message');
  });

  it('a failing post propagates (the outbox keeps the reply) and nothing else happens', async () => {
    const out = new ReplyOutbound(EDIT);
    out.post = async () => {
      throw new Error('platform down');
    };
    await expect(deliverReply(out, record({ statusMessageId: 's' }), memoryLogger().log)).rejects.toThrow('platform down');
    expect(out.calls).toEqual([]);
  });

  it('a reply the platform refuses for good is reported undeliverable, not thrown: the status message goes, nothing says it ended well', async () => {
    const out = new ReplyOutbound(EDIT);
    out.post = async () => {
      throw new Error('403 refused: bot was blocked by the user');
    };
    const log = memoryLogger();
    const report = await deliverReply(out, record({ statusMessageId: 's' }), log.log);
    expect(report).toEqual({ posted: [], undeliverable: '403 refused: bot was blocked by the user' });
    expect(strip(out.calls)).toEqual([{ op: 'remove', id: 's' }]);
    expect(log.lines().map((l) => l.msg)).toContain('the platform refused the reply for good; settled as undeliverable');
  });
});
