import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';

let fake: FakeOpenAI;
let client: OpenAI;
beforeEach(async () => {
  fake = await startFakeOpenAI();
  client = new OpenAI({ apiKey: 'sk-test', baseURL: fake.baseURL, maxRetries: 0 });
});
afterEach(async () => {
  await fake.close();
});

describe('fake OpenAI server via the real client', () => {
  it('answers a plain completion in OpenAI shape', async () => {
    fake.script([{ content: 'hi', toolCalls: [{ id: 'c1', name: 'f', arguments: '{"a":1}' }] }]);
    const res = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(res.object).toBe('chat.completion');
    expect(res.choices[0]?.finish_reason).toBe('tool_calls');
    expect(res.choices[0]?.message.tool_calls).toEqual([{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }]);
    expect(res.usage?.total_tokens).toBe((res.usage?.prompt_tokens ?? 0) + (res.usage?.completion_tokens ?? 0));
    fake.assertDone();
  });

  it('streams chunks with content pieces, tool-call deltas, finish and usage', async () => {
    fake.script([{ content: 'Let me look.', toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"notes.md"}' }] }]);
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    const contents = chunks.map((c) => c.choices[0]?.delta.content).filter((t) => t);
    expect(contents.length).toBeGreaterThan(1);
    expect(contents.join('')).toBe('Let me look.');
    const argPieces = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).map((t) => t.function?.arguments ?? '');
    expect(argPieces.join('')).toBe('{"path":"notes.md"}');
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)?.choices).toEqual([]);
    expect(chunks.at(-1)?.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('answers scripted errors in OpenAI error shape with retry-after', async () => {
    fake.script([{ status: 429, retryAfter: '1' }]);
    const err = await client.chat.completions.create({ model: 'm', messages: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const e = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.headers.get('retry-after')).toBe('1');
    expect(e.type).toBe('rate_limit_exceeded');
  });

  it('uses the handler when the script is empty; lists models', async () => {
    fake.setHandler((req) => ({ content: `echo: ${req.body.messages.at(-1).content}` }));
    const res = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'ping' }] });
    expect(res.choices[0]?.message.content).toBe('echo: ping');
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['fake-model']);
  });

  it('fails assertDone on unused steps and on unexpected requests', async () => {
    fake.script([{ content: 'unused' }]);
    expect(() => fake.assertDone()).toThrow(/1 scripted step\(s\) unused/);
    await client.chat.completions.create({ model: 'm', messages: [] });
    const err = await client.chat.completions.create({ model: 'm', messages: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(String((err as Error).message)).toMatch(/unexpected request #2/);
    expect(() => fake.assertDone()).toThrow(/1 unexpected request/);
  });
});
