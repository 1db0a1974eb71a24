import { describe, expect, it } from 'vitest';
import { estimateTextTokens, estimateTokens } from '../../src/agent/budget.js';
import { retryDelay } from '../../src/agent/model-step.js';
import { sleep } from '../../src/lib/sleep.js';
import { DEFAULT_SYSTEM_PROMPT } from '../../src/agent/prompt.js';
import { isComplete, isRepeat, unansweredCallIds } from '../../src/agent/resolve.js';
import { StreamAccumulator } from '../../src/agent/stream.js';
import type { AssistantMessage, ChatMessage } from '../../src/agent/types.js';

const user: ChatMessage = { role: 'user', content: 'list my todos' };
const call = (id: string, args = '{"path":"a.txt"}', content: string | null = 'Let me look.'): AssistantMessage => ({
  role: 'assistant',
  content,
  tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: args } }],
});
const result = (id: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content: 'alpha' });
const final = (content: string): ChatMessage => ({ role: 'assistant', content });

describe('isComplete', () => {
  it.each<[string, ChatMessage[], boolean]>([
    ['final text after answered calls', [user, call('c1'), result('c1'), final('Done.')], true],
    ['plain final text', [user, final('Hi!')], true],
    ['only the user message', [user], false],
    ['ends in tool calls with results', [user, call('c1'), result('c1')], false],
    ['ends in an assistant tool call (visible text does not make it complete)', [user, call('c1')], false],
    ['final text but an earlier call unanswered', [user, call('c1'), final('Done.')], false],
    ['a result placed before its call does not answer it', [user, result('c1'), call('c1'), final('Done.')], false],
    ['empty final text', [user, call('c1'), result('c1'), final('')], false],
    ['whitespace final text', [user, final('  \n')], false],
    ['null final content', [user, { role: 'assistant', content: null }], false],
    ['text parts count as text', [user, { role: 'assistant', content: [{ type: 'text', text: 'ok' }] }], true],
  ])('%s → %s', (_, transcript, expected) => {
    expect(isComplete(transcript)).toBe(expected);
  });

  it('lists unanswered call ids', () => {
    expect(unansweredCallIds([user, call('c1'), result('c1'), call('c2')])).toEqual(['c2']);
  });
});

describe('isRepeat', () => {
  it('ignores call ids and surrounding whitespace', () => {
    expect(isRepeat(call('c1'), call('c2', '{"path":"a.txt"}', ' Let me look. '))).toBe(true);
  });
  it('differs on arguments, text, or with no previous message', () => {
    expect(isRepeat(call('c1'), call('c2', '{"path":"b.txt"}'))).toBe(false);
    expect(isRepeat(call('c1'), call('c2', '{"path":"a.txt"}', 'Checking again.'))).toBe(false);
    expect(isRepeat(undefined, call('c2'))).toBe(false);
  });
});

describe('retryDelay and sleep', () => {
  it('backs off exponentially with jitter, honours retry-after, caps', () => {
    expect(retryDelay(1, undefined, 10_000, () => 0)).toBe(250);
    expect(retryDelay(1, undefined, 10_000, () => 1)).toBe(500);
    expect(retryDelay(3, undefined, 10_000, () => 1)).toBe(2_000);
    expect(retryDelay(1, 1_200, 10_000, () => 1)).toBe(1_200);
    expect(retryDelay(1, 60_000, 3_000, () => 0)).toBe(3_000);
    expect(retryDelay(6, undefined, 3_000, () => 1)).toBe(3_000);
  });

  it('sleep resolves false as soon as the signal aborts', async () => {
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 20);
    expect(await sleep(5_000, ac.signal)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await sleep(5, new AbortController().signal)).toBe(true);
  });
});

describe('estimateTokens', () => {
  it('is chars/4 for ASCII and one per non-ASCII char', () => {
    expect(estimateTextTokens('abcdefgh')).toBe(2);
    expect(estimateTextTokens('日本語')).toBe(3);
    expect(estimateTokens([{ role: 'user', content: 'x'.repeat(400) }])).toBeGreaterThanOrEqual(100);
  });
});

describe('DEFAULT_SYSTEM_PROMPT', () => {
  it('is short and says what matters', () => {
    expect(estimateTextTokens(DEFAULT_SYSTEM_PROMPT)).toBeLessThan(250);
    expect(DEFAULT_SYSTEM_PROMPT).toMatch(/Switchboard/);
    expect(DEFAULT_SYSTEM_PROMPT).toMatch(/workspace/);
    expect(DEFAULT_SYSTEM_PROMPT).toMatch(/Before using tools/);
    expect(DEFAULT_SYSTEM_PROMPT).toMatch(/Never invent file contents/);
    expect(DEFAULT_SYSTEM_PROMPT).toMatch(/Markdown/);
  });
});

describe('StreamAccumulator compat', () => {
  const chunk = (delta: object, finish: string | null = null) =>
    ({ id: 'x', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] }) as never;

  it('merges tool-call deltas by index, and opens a call per new id when index is missing', () => {
    const acc = new StreamAccumulator();
    acc.add(chunk({ content: 'Let ' }));
    acc.add(chunk({ content: 'me look.' }));
    acc.add(chunk({ tool_calls: [{ index: 0, id: 'a', function: { name: 'read_file', arguments: '{"pa' } }] }));
    acc.add(chunk({ tool_calls: [{ index: 0, function: { arguments: 'th":"x"}' } }] }));
    acc.add(chunk({ tool_calls: [{ id: 'b', function: { name: 'list_files', arguments: '{}' } }] }));
    acc.add(chunk({ tool_calls: [{ id: 'c', function: { name: 'read_file', arguments: '{"path":"y"}' } }] }));
    acc.add(chunk({}, 'tool_calls'));
    expect(acc.text).toBe('Let me look.');
    expect(acc.finishReason).toBe('tool_calls');
    expect(acc.toolCalls()).toEqual([
      { id: 'a', name: 'read_file', arguments: '{"path":"x"}' },
      { id: 'b', name: 'list_files', arguments: '{}' },
      { id: 'c', name: 'read_file', arguments: '{"path":"y"}' },
    ]);
  });
});
