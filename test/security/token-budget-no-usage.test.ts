import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { estimateTextTokens, estimateTokens } from '../../src/agent/budget.js';
import type { ChatMessage, ModelClient, ModelRequest } from '../../src/agent/types.js';
import { TokenBudget } from '../../src/access/token-budget.js';
import { terminalMessage } from '../../src/channels/terminal/inbound.js';
import { createLogger } from '../../src/log.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { historyForTurn } from '../../src/run/history-prompt.js';
import type { RunContext } from '../../src/run/context.js';
import { allowanceFor } from '../../src/run/token-allowance.js';
import { startHarness, type Harness } from '../agent/harness.js';
import type { RecordedRequest } from '../fakes/openai-server.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

/**
 * Finding (low): many OpenAI-compatible servers report no `usage` (above all when streaming).
 * Such a call was counted as 0 tokens, so a person on such an endpoint had no USER_DAILY_TOKENS
 * limit at all. A call without reported usage is now charged by estimate: the request's estimate
 * plus the answer's (its text and its tool calls' JSON).
 */
const quiet = () => createLogger('info', 'test', new Writable({ write: (_chunk, _enc, done) => done() }));
const READ = { id: 'call_r', name: 'read_file', arguments: '{"path":"notes.md"}' };

/** The estimate of one recorded request's prompt: its messages and tools, as the model got them. */
const promptOf = (req: RecordedRequest) => estimateTokens(req.body.messages as ChatMessage[], req.body.tools ?? []);

describe('security: a model that reports no usage still spends the daily token budget', () => {
  const redis = testRedis();
  const prefix = uniquePrefix('sec-no-usage');
  let h: Harness;
  let n = 0;
  beforeEach(async () => {
    h = await startHarness({ 'notes.md': 'the notes' });
  });
  afterEach(async () => {
    await h.close();
  });
  afterAll(async () => {
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  /** A person of their own, with the real allowance over the real Redis counter. */
  const person = (limit: number) => {
    const budget = new TokenBudget(redis, prefix, limit);
    const message = terminalMessage('s', 'hi', `no-usage-${++n}`);
    const ctx = { deps: { agent: { tokenBudget: budget }, metrics: new Metrics() }, log: quiet() } as unknown as RunContext;
    const user = { platform: message.platform, id: message.sender.id };
    return { budget, allowance: allowanceFor(ctx, message)!, spent: () => budget.spent(user) };
  };

  for (const stream of [false, true]) {
    it(`${stream ? 'streamed' : 'plain'}: each call is charged its prompt's estimate plus its answer's, and the second run is refused`, async () => {
      // Measured first: what one "hello" call is estimated at, prompt and answer.
      h.fake.script([{ content: 'Hello there.', usage: null }]);
      const probe = person(1_000_000);
      await h.run('hello', { stream, budget: probe.allowance });
      const prompt = promptOf(h.fake.requests[0]!);
      const charge = prompt + estimateTextTokens('Hello there.');
      expect(await probe.spent()).toBe(charge);

      // A limit that fits the first call, and leaves less than the second one's prompt.
      const ada = person(charge + prompt - 1);
      h.fake.script([{ content: 'Hello there.', usage: null }]);
      const first = await h.run('hello', { stream, budget: ada.allowance });
      expect(first.outcome).toMatchObject({ state: 'completed', answer: 'Hello there.' });
      // Nothing was reported…
      expect(first.outcome.usage.totalTokens).toBe(0);
      // …and the estimate was charged.
      expect(await ada.spent()).toBe(charge);

      const second = await h.run('hello', { stream, budget: ada.allowance });
      expect(second.outcome).toMatchObject({ state: 'failed', reason: 'budget', steps: 0, modelCalls: 0 });
      expect(h.fake.requests).toHaveLength(2);
      expect(await ada.spent()).toBe(charge);
    });
  }

  it("a tool call's JSON is part of the answer's estimate; each fresh call is charged", async () => {
    const ada = person(1_000_000);
    h.fake.script([
      { content: 'Reading.', toolCalls: [READ], usage: null },
      { content: 'The notes say: the notes.', usage: null },
    ]);
    const { outcome } = await h.run('read the notes', { budget: ada.allowance });
    expect(outcome).toMatchObject({ state: 'completed', modelCalls: 2, usage: { totalTokens: 0 } });
    const [one, two] = h.fake.requests;
    const call = (two!.body.messages as ChatMessage[]).find((m) => m.role === 'assistant');
    const calls = call && 'tool_calls' in call ? call.tool_calls : undefined;
    expect(calls).toHaveLength(1);
    const expected = promptOf(one!) + estimateTextTokens(`Reading.${JSON.stringify(calls)}`) + promptOf(two!) + estimateTextTokens('The notes say: the notes.');
    expect(await ada.spent()).toBe(expected);
  });

  it('a call that fails and reports nothing is not charged (its reservation is released)', async () => {
    const ada = person(1_000_000);
    h.fake.script([{ status: 400, body: { error: { message: 'bad request' } } }]);
    const { outcome } = await h.run('hello', { budget: ada.allowance });
    expect(outcome).toMatchObject({ state: 'failed', reason: 'model_error' });
    expect(await ada.spent()).toBe(0);
  });

  it('the history summary call without usage is charged by estimate too', async () => {
    const budget = new TokenBudget(redis, prefix, 1_000_000);
    const message = terminalMessage('s', 'hi', `no-usage-summary-${++n}`);
    const requests: ModelRequest[] = [];
    const model: ModelClient = {
      name: 'no-usage',
      async complete(request) {
        requests.push(request);
        return {
          message: { role: 'assistant', content: 'They talked about the notes.' },
          stopReason: 'stop',
          usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
        };
      },
    };
    const saved: string[] = [];
    const ctx = {
      deps: { agent: { tokenBudget: budget, model }, metrics: new Metrics() },
      log: quiet(),
      store: { saveSummary: async (s: string) => void saved.push(s) },
    } as unknown as RunContext;
    const turn = (i: number): ChatMessage[] => [
      { role: 'user', content: `question ${i}: ${'words about the notes '.repeat(20)}` },
      { role: 'assistant', content: `answer ${i}: ${'more words about the notes '.repeat(20)}` },
    ];
    const entries = Array.from({ length: 6 }, (_, i) => JSON.stringify(turn(i + 1)));
    const history = await historyForTurn(
      ctx,
      { entries, count: '6', summary: null },
      { model, historyTokens: 600 },
      new AbortController().signal,
      allowanceFor(ctx, message),
    );

    expect(history.summary?.text).toBe('They talked about the notes.');
    expect(requests).toHaveLength(1);
    const charge = estimateTokens(requests[0]!.messages, requests[0]!.tools) + estimateTextTokens('They talked about the notes.');
    expect(await budget.spent({ platform: message.platform, id: message.sender.id })).toBe(charge);
  });
});
