import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventsOf, startHarness, toolMessages, type Harness } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await startHarness({ 'a.txt': 'alpha\n' });
});
afterEach(async () => {
  await h.close();
});

const LOOK = { content: 'Let me look.', toolCalls: [{ name: 'read_file', arguments: '{"path":"a.txt"}' }] };

describe('model retries', () => {
  it('honours retry-after on a 429 (0.6 s, above the 250–500 ms first backoff)', async () => {
    h.fake.script([{ status: 429, retryAfter: '0.6' }, { content: 'done' }]);
    const { outcome, events } = await h.run('hi', { limits: { maxRetryDelayMs: 2_000 } });

    expect(outcome).toMatchObject({ state: 'completed', answer: 'done', steps: 1, modelCalls: 2 });
    const [retry] = eventsOf(events, 'model_retry');
    expect(retry).toMatchObject({ step: 1, attempt: 1, delayMs: 600 });
    expect(retry?.error).toMatch(/429/);
    const gap = (h.fake.requests[1]?.at ?? 0) - (h.fake.requests[0]?.at ?? 0);
    expect(gap).toBeGreaterThanOrEqual(595);
  });

  it('clamps a long retry-after to maxRetryDelayMs', async () => {
    h.fake.script([{ status: 429, retryAfter: '30' }, { content: 'done' }]);
    const { outcome, events } = await h.run('hi', { limits: { maxRetryDelayMs: 80 } });
    expect(outcome.state).toBe('completed');
    expect(eventsOf(events, 'model_retry')[0]?.delayMs).toBe(80);
  });

  it('retries a 500 then succeeds (stream mode)', async () => {
    h.fake.script([{ status: 500 }, { content: 'recovered' }]);
    const { outcome, events } = await h.run('hi', { stream: true });
    expect(outcome).toMatchObject({ state: 'completed', answer: 'recovered', steps: 1, modelCalls: 2 });
    expect(eventsOf(events, 'model_retry').map((e) => e.error)).toEqual(['model endpoint failed (500): scripted 500']);
    h.fake.assertDone();
  });

  it('a retry after a tool ran does not run the tool again', async () => {
    h.fake.script([LOOK, { status: 503 }, { status: 429, retryAfter: '0' }, { content: 'alpha' }]);
    const { outcome, events } = await h.run('look it up');

    expect(outcome).toMatchObject({ state: 'completed', answer: 'alpha', steps: 2, modelCalls: 4, toolCalls: 1 });
    expect(eventsOf(events, 'tool_start')).toHaveLength(1);
    // Each retry resent the same single tool result.
    for (const req of h.fake.requests.slice(1)) expect(toolMessages(req)).toHaveLength(1);
    h.fake.assertDone();
  });

  it('retries a model call that times out', async () => {
    h.fake.script([{ content: 'slow', delayMs: 1_000 }, { content: 'fast' }]);
    const { outcome, events } = await h.run('hi', { timeoutMs: 150 });
    expect(outcome).toMatchObject({ state: 'completed', answer: 'fast', modelCalls: 2 });
    expect(eventsOf(events, 'model_retry')[0]?.error).toBe('model call timed out after 150 ms');
  });
});

describe('cancellation', () => {
  it('abort during the backoff wait → cancelled at once, no further request', async () => {
    const ac = new AbortController();
    h.fake.script([LOOK, { status: 429, retryAfter: '5' }]);
    const started = Date.now();
    const { outcome, events } = await h.run('look it up', {
      signal: ac.signal,
      limits: { maxRetryDelayMs: 10_000 },
      onEvent: (e) => {
        if (e.type === 'model_retry') setTimeout(() => ac.abort(), 50);
      },
    });

    expect(outcome).toMatchObject({ state: 'cancelled', reason: 'cancelled', toolCalls: 1 });
    expect(outcome.answer).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(h.fake.requests).toHaveLength(2);
    expect(eventsOf(events, 'model_retry')[0]?.delayMs).toBe(5_000);
    expect(eventsOf(events, 'final')).toHaveLength(0);
    h.fake.assertDone();
  });

  it('abort during the model call → cancelled (stream)', async () => {
    const ac = new AbortController();
    h.fake.script([{ content: 'too late', delayMs: 3_000 }]);
    setTimeout(() => ac.abort(), 100);
    const started = Date.now();
    const { outcome } = await h.run('hi', { signal: ac.signal, stream: true });
    expect(outcome).toMatchObject({ state: 'cancelled', reason: 'cancelled', steps: 1 });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('an already aborted signal makes no model call', async () => {
    const ac = new AbortController();
    ac.abort();
    const { outcome, events } = await h.run('hi', { signal: ac.signal });
    expect(outcome).toMatchObject({ state: 'cancelled', reason: 'cancelled', steps: 0, modelCalls: 0 });
    expect(h.fake.requests).toHaveLength(0);
    expect(events.map((e) => e.type)).toEqual(['end']);
  });

  it('abort while a tool runs: remaining calls are answered "not run", then cancelled', async () => {
    const ac = new AbortController();
    h.fake.script([
      {
        content: 'Two reads.',
        toolCalls: [
          { id: 'r1', name: 'read_file', arguments: '{"path":"a.txt"}' },
          { id: 'r2', name: 'read_file', arguments: '{"path":"a.txt"}' },
        ],
      },
    ]);
    const { outcome } = await h.run('read twice', {
      signal: ac.signal,
      onEvent: (e) => {
        if (e.type === 'tool_end') ac.abort();
      },
    });
    expect(outcome).toMatchObject({ state: 'cancelled', toolCalls: 1 });
    const tools = outcome.transcript.filter((m) => m.role === 'tool');
    expect(tools.map((m) => [m.tool_call_id, m.content])).toEqual([
      ['r1', 'alpha'],
      ['r2', 'Error: not run: the run was cancelled.'],
    ]);
  });
});
