import { describe, expect, it } from 'vitest';
import { estimateTokens } from '../../src/agent/budget.js';
import { boundHistory, compactTurn } from '../../src/agent/history.js';
import type { ChatMessage } from '../../src/agent/types.js';

const turn = (n: number, size = 40): ChatMessage[] => [
  { role: 'user', content: `question ${n} ${'q'.repeat(size)}` },
  { role: 'assistant', content: null, tool_calls: [{ id: `c${n}`, type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } }] },
  { role: 'tool', tool_call_id: `c${n}`, content: 'r'.repeat(size) },
  { role: 'assistant', content: `answer ${n}` },
];

describe('boundHistory', () => {
  it('keeps the most recent whole turns within the budget, oldest first', () => {
    const turns = [turn(1), turn(2), turn(3)];
    const one = estimateTokens(turn(3));
    const kept = boundHistory(turns, one * 2 + 1);
    expect(kept).toHaveLength(8);
    expect(kept[0]).toEqual(turns[1]![0]);
    expect(kept.at(-1)).toEqual({ role: 'assistant', content: 'answer 3' });
  });

  it('never splits a turn: a budget just under one turn keeps nothing, no orphan tool message', () => {
    const kept = boundHistory([turn(1), turn(2)], estimateTokens(turn(2)) - 1);
    expect(kept).toEqual([]);
  });

  it('stops at the first turn that does not fit (no gaps)', () => {
    const turns = [turn(1, 10), turn(2, 4_000), turn(3, 10)];
    const kept = boundHistory(turns, estimateTokens(turn(1, 10)) * 2 + 10);
    expect(kept.map((m) => m.content).filter((c) => typeof c === 'string' && c.startsWith('answer'))).toEqual(['answer 3']);
  });

  it('empty input → empty history', () => {
    expect(boundHistory([], 1_000)).toEqual([]);
  });
});

describe('compactTurn', () => {
  it('cuts long tool results with a note and leaves short ones alone', () => {
    const t = turn(1, 500);
    const out = compactTurn(t, 100);
    const tool = out[2] as { content: string };
    expect(tool.content.startsWith('r'.repeat(100) + '\n')).toBe(true);
    expect(tool.content).toContain('400 of 500 characters omitted');
    expect(out[0]).toBe(t[0]);
    expect(out[3]).toBe(t[3]);
    expect(compactTurn(turn(2, 50), 100)).toEqual(turn(2, 50));
  });

  it('cuts long string arguments and keeps them valid JSON', () => {
    const big: ChatMessage = {
      role: 'assistant',
      content: 'Writing.',
      tool_calls: [{ id: 'w', type: 'function', function: { name: 'write_file', arguments: JSON.stringify({ path: 'a.txt', content: 'z'.repeat(1_000) }) } }],
    };
    const [out] = compactTurn([big], 200) as [Extract<ChatMessage, { role: 'assistant' }>];
    const fn = out.tool_calls?.[0];
    const args = JSON.parse(fn?.type === 'function' ? fn.function.arguments : '');
    expect(args.path).toBe('a.txt');
    expect(args.content).toMatch(/^z{200}\n\[… value cut for history: 800 of 1000 characters omitted\]$/);
  });

  it('replaces unparsable long arguments with a valid JSON note', () => {
    const bad: ChatMessage = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'w', type: 'function', function: { name: 'x', arguments: '{'.repeat(500) } }],
    };
    const [out] = compactTurn([bad], 100) as [Extract<ChatMessage, { role: 'assistant' }>];
    const fn = out.tool_calls?.[0];
    expect(JSON.parse(fn?.type === 'function' ? fn.function.arguments : '')).toEqual({ _omitted: 'arguments of 500 characters omitted from history' });
  });
});
