import { createServer } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/agent/model-error.js';
import { createOpenAIModel } from '../../src/agent/openai-model.js';
import type { ModelClient } from '../../src/agent/types.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';

let fake: FakeOpenAI;
beforeEach(async () => {
  fake = await startFakeOpenAI();
});
afterEach(async () => {
  await fake.close();
});

const TOOLS = [{ type: 'function' as const, function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } }];

function model(opts: { stream?: boolean; timeoutMs?: number; maxTokens?: number; baseURL?: string } = {}): ModelClient {
  return createOpenAIModel({
    apiKey: 'sk-test',
    baseURL: opts.baseURL ?? fake.baseURL,
    model: 'fake-model',
    stream: opts.stream ?? false,
    timeoutMs: opts.timeoutMs ?? 5_000,
    ...(opts.maxTokens !== undefined ? { maxTokens: opts.maxTokens } : {}),
  });
}

function ask(m: ModelClient, signal = new AbortController().signal) {
  return m.complete({ messages: [{ role: 'user', content: 'hi' }], tools: TOOLS, signal });
}

describe.each([{ stream: false }, { stream: true }])('createOpenAIModel (stream: $stream)', ({ stream }) => {
  it('returns text, stop reason and usage', async () => {
    fake.script([{ content: 'Hello there, friend.', usage: { prompt_tokens: 11, completion_tokens: 5 } }]);
    const res = await ask(model({ stream }));
    expect(res).toEqual({
      message: { role: 'assistant', content: 'Hello there, friend.' },
      stopReason: 'stop',
      usage: { promptTokens: 11, completionTokens: 5, totalTokens: 16 },
    });
    const body = fake.requests[0]?.body;
    expect(body.tools).toEqual(TOOLS);
    expect(body.model).toBe('fake-model');
    expect(fake.requests[0]?.headers.authorization).toBe('Bearer sk-test');
    if (stream) expect(body.stream_options).toEqual({ include_usage: true });
  });

  it('accumulates several tool calls with their ids and arguments', async () => {
    fake.script([
      {
        content: 'Let me look.',
        toolCalls: [
          { id: 'call_a', name: 'read_file', arguments: '{"path":"notes/meeting.md"}' },
          { id: 'call_b', name: 'read_file', arguments: '{"path":"todo.txt"}' },
        ],
      },
    ]);
    const res = await ask(model({ stream }));
    expect(res.stopReason).toBe('toolUse');
    expect(res.message).toEqual({
      role: 'assistant',
      content: 'Let me look.',
      tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '{"path":"notes/meeting.md"}' } },
        { id: 'call_b', type: 'function', function: { name: 'read_file', arguments: '{"path":"todo.txt"}' } },
      ],
    });
  });

  it('compat: tool calls win over finish_reason "stop"; missing id generated; empty arguments become {}; no usage → 0', async () => {
    fake.script([{ content: null, toolCalls: [{ id: '', name: 'list_files', arguments: '' }], finishReason: 'stop', usage: null }]);
    const res = await ask(model({ stream }));
    expect(res.stopReason).toBe('toolUse');
    expect(res.message.content).toBeNull();
    const call = res.message.tool_calls?.[0];
    expect(call?.id).toMatch(/^call_sb_[0-9a-f]{20}$/);
    expect(call?.type === 'function' && call.function).toEqual({ name: 'list_files', arguments: '{}' });
    expect(res.usage).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
  });

  it('maps finish_reason length', async () => {
    fake.script([{ content: 'cut he', finishReason: 'length' }]);
    const res = await ask(model({ stream }));
    expect(res.stopReason).toBe('length');
    expect(res.message.content).toBe('cut he');
  });

  it('an aborted call answers stopReason aborted, quickly', async () => {
    fake.script([{ content: 'late', delayMs: 3_000 }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const started = Date.now();
    const res = await ask(model({ stream }), ac.signal);
    expect(res.stopReason).toBe('aborted');
    expect(res.error).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('createOpenAIModel errors (never throws)', () => {
  it('a server that echoes the key in its error text: the key never reaches the error (logs, job data, run record)', async () => {
    fake.script([
      {
        status: 401,
        body: { error: { message: 'Incorrect API key provided: sk-test-echoed-key-0123456789.', type: 'invalid_api_key', param: null, code: null } },
      },
    ]);
    const m = createOpenAIModel({ apiKey: 'sk-test-echoed-key-0123456789', baseURL: fake.baseURL, model: 'fake-model', stream: false, timeoutMs: 5_000 });
    const res = await ask(m);
    expect(res.error?.message).toBe('model endpoint refused the API key (401): Incorrect API key provided: [redacted].');
  });

  it('401 → clear, not retryable', async () => {
    fake.script([{ status: 401 }]);
    const res = await ask(model());
    expect(res.stopReason).toBe('error');
    expect(res.error).toEqual({ message: 'model endpoint refused the API key (401): scripted 401', retryable: false });
  });

  it.each([
    [400, false],
    [403, false],
    [404, false],
    [408, true],
    [409, true],
    [429, true],
    [500, true],
    [503, true],
  ])('status %i → retryable %s', async (status, retryable) => {
    fake.script([{ status }]);
    const res = await ask(model());
    expect(res.error?.retryable).toBe(retryable);
    expect(res.error?.message).toContain(`(${status}`);
  });

  it('429 carries retry-after in ms', async () => {
    fake.script([{ status: 429, retryAfter: '2' }]);
    const res = await ask(model({ stream: true }));
    expect(res.error).toMatchObject({ retryable: true, retryAfterMs: 2_000 });
  });

  it('connection refused → retryable', async () => {
    const port = await freePort();
    const res = await ask(model({ baseURL: `http://127.0.0.1:${port}/v1` }));
    expect(res.stopReason).toBe('error');
    expect(res.error?.retryable).toBe(true);
    expect(res.error?.message).toMatch(/^could not reach the model endpoint: .*ECONNREFUSED/);
  });

  it.each([false, true])('timeout → retryable (stream: %s)', async (stream) => {
    fake.script([{ content: 'slow', delayMs: 2_000 }]);
    const res = await ask(model({ stream, timeoutMs: 100 }));
    expect(res.error).toEqual({ message: 'model call timed out after 100 ms', retryable: true });
  });

  it('maxTokens goes out as max_tokens to a compatible server', async () => {
    fake.script([{ content: 'ok' }]);
    await ask(model({ maxTokens: 64 }));
    expect(fake.requests[0]?.body.max_tokens).toBe(64);
    expect(fake.requests[0]?.body.max_completion_tokens).toBeUndefined();
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it.each([
    [{ 'retry-after': '3' }, 3_000],
    [{ 'retry-after': '0.25' }, 250],
    [{ 'retry-after': 'Wed, 01 Jan 2025 00:00:05 GMT' }, 5_000],
    [{ 'retry-after': 'Tue, 31 Dec 2024 23:00:00 GMT' }, 0],
    [{ 'retry-after-ms': '1500', 'retry-after': '9' }, 1_500],
    [{ 'retry-after': 'soon' }, undefined],
    [{ 'retry-after': '-1' }, undefined],
    [{}, undefined],
  ])('%o → %s', (headers, expected) => {
    expect(parseRetryAfter(new Headers(headers), now)).toBe(expected);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
