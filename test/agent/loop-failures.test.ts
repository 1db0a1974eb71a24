import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EMPTY_NUDGE, REPEAT_NUDGE, runAgent } from '../../src/agent/loop.js';
import { TEST_LIMITS } from './harness.js';
import { eventsOf, lastMessage, startHarness, toolMessages, type Harness } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await startHarness({ 'a.txt': 'alpha\n', 'f1.txt': '1', 'f2.txt': '2', 'f3.txt': '3', 'f4.txt': '4' });
});
afterEach(async () => {
  await h.close();
});

const LOOK = { content: 'Let me look.', toolCalls: [{ name: 'read_file', arguments: '{"path":"a.txt"}' }] };

describe('incomplete turn: "Let me look" + tool call, then no answer', () => {
  it('every later call fails (500 after retries) → failed incomplete_turn', async () => {
    h.fake.script([LOOK, { status: 500 }, { status: 502 }, { status: 503 }]);
    const { outcome, events } = await h.run('look it up', { limits: { modelRetries: 2 } });

    expect(outcome.state).toBe('failed');
    expect(outcome.reason).toBe('incomplete_turn');
    expect(outcome.answer).toBeUndefined();
    expect(outcome.detail).toMatch(/503/);
    expect(h.fake.requests).toHaveLength(4);
    expect(outcome.steps).toBe(2);
    expect(outcome.modelCalls).toBe(4);
    expect(outcome.toolCalls).toBe(1);
    expect(eventsOf(events, 'model_retry').map((e) => e.attempt)).toEqual([1, 2]);
    expect(eventsOf(events, 'final')).toHaveLength(0);
    expect(events.at(-1)).toEqual({ type: 'end', outcome });
    h.fake.assertDone();
  });

  it('every later call returns nothing → one nudge, then failed incomplete_turn', async () => {
    h.fake.script([LOOK]);
    h.fake.setHandler(() => ({ content: '' }));
    const { outcome, events } = await h.run('look it up');

    expect(outcome.state).toBe('failed');
    expect(outcome.reason).toBe('incomplete_turn');
    expect(h.fake.requests).toHaveLength(3);
    expect(lastMessage(h.fake.requests[2])).toEqual({ role: 'user', content: EMPTY_NUDGE });
    expect(eventsOf(events, 'nudge')).toEqual([{ type: 'nudge', step: 2, reason: 'empty' }]);
    // The nudge is loop control, not conversation: the transcript ends in the answered tool call.
    expect(outcome.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });

  it('a null-content, whitespace-only answer counts as nothing too (stream)', async () => {
    h.fake.script([LOOK, { content: '  \n ' }, { content: null }]);
    const { outcome } = await h.run('look it up', { stream: true });
    expect(outcome.reason).toBe('incomplete_turn');
    h.fake.assertDone();
  });

  it('an empty nudge that works completes the run', async () => {
    h.fake.script([LOOK, { content: '' }, { content: 'alpha, as the file says.' }]);
    const { outcome } = await h.run('look it up');
    expect(outcome.state).toBe('completed');
    expect(outcome.answer).toBe('alpha, as the file says.');
    expect(outcome.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });
});

describe('failures without tool calls', () => {
  it('empty answers with no tool call → empty_answer', async () => {
    h.fake.script([{ content: '' }, { content: '' }]);
    const { outcome } = await h.run('hello?');
    expect(outcome).toMatchObject({ state: 'failed', reason: 'empty_answer', steps: 2 });
    h.fake.assertDone();
  });

  it('a model failing from the first call → model_error with the endpoint message', async () => {
    h.fake.script([{ status: 500 }, { status: 500 }, { status: 500 }]);
    const { outcome } = await h.run('hello?');
    expect(outcome).toMatchObject({ state: 'failed', reason: 'model_error', steps: 1, modelCalls: 3 });
    expect(outcome.detail).toBe('model endpoint failed (500): scripted 500');
  });

  it('a refused key is not retried', async () => {
    h.fake.script([
      { status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } },
    ]);
    const { outcome, events } = await h.run('hello?');
    expect(outcome.reason).toBe('model_error');
    expect(outcome.detail).toBe('model endpoint refused the API key (401): Incorrect API key provided');
    expect(h.fake.requests).toHaveLength(1);
    expect(eventsOf(events, 'model_retry')).toHaveLength(0);
  });

  it('a prompt over the context budget fails before any model call', async () => {
    const { outcome } = await h.run('x'.repeat(4_000), { limits: { maxContextTokens: 500 } });
    expect(outcome).toMatchObject({ state: 'failed', reason: 'context_budget', steps: 0, modelCalls: 0 });
    expect(outcome.detail).toMatch(/over the budget of 500/);
    expect(h.fake.requests).toHaveLength(0);
  });

  it('a growing transcript hits the context budget mid-run', async () => {
    await h.close();
    h = await startHarness({ 'big.txt': 'y'.repeat(8_000) });
    h.fake.script([{ content: 'Reading.', toolCalls: [{ name: 'read_file', arguments: '{"path":"big.txt"}' }] }]);
    const { outcome } = await h.run('read big', { limits: { maxContextTokens: 1_500 } });
    expect(outcome).toMatchObject({ state: 'failed', reason: 'context_budget', steps: 1, toolCalls: 1 });
    h.fake.assertDone();
  });

  it('finish_reason length with text completes, flagged in detail', async () => {
    h.fake.script([{ content: 'The answer is forty', finishReason: 'length' }]);
    const { outcome } = await h.run('hello?');
    expect(outcome).toMatchObject({ state: 'completed', answer: 'The answer is forty' });
    expect(outcome.detail).toMatch(/finish_reason length/);
  });
});

describe('step limit and repetition', () => {
  it('a model that always calls a tool stops at maxSteps: 3 → step_limit after exactly 3 calls', async () => {
    h.fake.setHandler((req) => {
      const n = (req.body.messages as unknown[]).filter((m: any) => m.role === 'tool').length + 1;
      return { content: `Reading f${n}.`, toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: `f${n}.txt` }) }] };
    });
    const { outcome, events } = await h.run('read forever', { limits: { maxSteps: 3 } });

    expect(outcome).toMatchObject({ state: 'failed', reason: 'step_limit', steps: 3, modelCalls: 3, toolCalls: 3 });
    expect(h.fake.requests).toHaveLength(3);
    expect(eventsOf(events, 'nudge')).toHaveLength(0);
    expect(outcome.transcript.at(-1)?.role).toBe('tool'); // every call answered even at the limit
  });

  it('an identical response gets one nudge (the repeat is dropped), later repeats none', async () => {
    h.fake.script([LOOK, LOOK, LOOK, LOOK, { content: 'alpha' }]);
    const { outcome, events } = await h.run('look it up');

    expect(outcome.state).toBe('completed');
    expect(h.fake.requests).toHaveLength(5);
    expect(eventsOf(events, 'nudge')).toEqual([{ type: 'nudge', step: 2, reason: 'repeat' }]);
    // Request 3 carries the nudge right after the first (answered) call; the repeat is not in it.
    const third = h.fake.requests[2]?.body.messages as any[];
    expect(third.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(lastMessage(h.fake.requests[2])).toEqual({ role: 'user', content: REPEAT_NUDGE });
    // Repeats 3 and 4 ran their tool; only one nudge in the whole conversation.
    const fifth = h.fake.requests[4]?.body.messages as any[];
    expect(fifth.filter((m) => m.content === REPEAT_NUDGE)).toHaveLength(1);
    expect(toolMessages(h.fake.requests[4])).toHaveLength(3);
    expect(outcome.toolCalls).toBe(3);
    expect(outcome.transcript.some((m) => m.content === REPEAT_NUDGE)).toBe(false);
    h.fake.assertDone();
  });

  it('a call that failed may be retried exactly as it was: no nudge, it runs again', async () => {
    const MISSING = { content: 'Let me look.', toolCalls: [{ name: 'read_file', arguments: '{"path":"missing.txt"}' }] };
    h.fake.script([MISSING, MISSING, { content: 'It is not there.' }]);
    const { outcome, events } = await h.run('look it up');

    expect(outcome).toMatchObject({ state: 'completed', toolCalls: 2 });
    expect(eventsOf(events, 'nudge')).toEqual([]);
    expect(toolMessages(h.fake.requests[2])).toHaveLength(2);
    h.fake.assertDone();
  });
});

describe('a ModelClient that breaks its contract', () => {
  it('throwing instead of returning an error → model_error, no retries, no throw from runAgent', async () => {
    let calls = 0;
    const outcome = await runAgent({
      model: {
        name: 'broken',
        complete: async () => {
          calls++;
          throw new Error('boom');
        },
      },
      tools: h.tools,
      system: 's',
      history: [],
      input: [{ role: 'user', content: 'hi' }],
      limits: TEST_LIMITS,
      signal: new AbortController().signal,
    });
    expect(outcome).toMatchObject({ state: 'failed', reason: 'model_error', detail: 'model client threw: boom', modelCalls: 1 });
    expect(calls).toBe(1);
  });
});

describe('events', () => {
  it('a listener that throws does not break the run', async () => {
    h.fake.script([LOOK, { content: 'alpha' }]);
    let seen = 0;
    const { outcome } = await h.run('look it up', {
      onEvent: () => {
        seen++;
        throw new Error('listener broke');
      },
    });
    expect(outcome.state).toBe('completed');
    expect(seen).toBe(7);
  });
});
