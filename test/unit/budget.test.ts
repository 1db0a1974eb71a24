import { describe, expect, it } from 'vitest';
import { estimateTextTokens, estimateTokens, IMAGE_TOKENS } from '../../src/agent/budget.js';
import { planHistory } from '../../src/agent/summary.js';
import type { ChatMessage } from '../../src/agent/types.js';

/** The estimate's definition, one UTF-16 unit at a time: ASCII / 4 rounded up, plus one per other unit. */
function byDefinition(text: string): number {
  let ascii = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 128) ascii++;
  return Math.ceil(ascii / 4) + (text.length - ascii);
}

describe('the token estimate', () => {
  it('counts ASCII by fours and every other UTF-16 unit as one, like its definition', () => {
    const samples = ['', 'a', 'abcd', 'abcde', '日本語のテキスト', 'mixed 日本 text', '😀 emoji (two units each) 😀', '\u0000\u007f\u0080', 'x'.repeat(10_001)];
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let n = 0; n < 50; n++)
      samples.push(
        Array.from({ length: Math.floor(random() * 200) }, () =>
          String.fromCharCode(random() < 0.8 ? Math.floor(random() * 128) : 128 + Math.floor(random() * 60_000)),
        ).join(''),
      );
    for (const text of samples) expect(estimateTextTokens(text), JSON.stringify(text.slice(0, 40))).toBe(byDefinition(text));
  });

  it('counts an inline image as a fixed cost, not its base64, and a linked image by its text', () => {
    const text: ChatMessage = { role: 'user', content: [{ type: 'text', text: 'what is this?' }] };
    const inline: ChatMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'what is this?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(400_000)}` } },
      ],
    };
    const linked: ChatMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'what is this?' },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
      ],
    };
    const extra = estimateTokens([inline]) - estimateTokens([text]);
    expect(extra).toBeGreaterThanOrEqual(IMAGE_TOKENS);
    expect(extra).toBeLessThan(IMAGE_TOKENS + 50);
    expect(estimateTokens([linked])).toBe(estimateTextTokens(JSON.stringify([linked])));
  });

  it('plans a stored history the same from the stored JSON as from the parsed turns', () => {
    const turns: ChatMessage[][] = Array.from({ length: 30 }, (_, i) => [
      { role: 'user', content: `question ${i} ${'q'.repeat(i * 37)}` },
      { role: 'assistant', content: `answer ${i} 答え ${'a'.repeat(i * 11)}` },
    ]);
    const stored = turns.map((t) => JSON.stringify(t));
    for (const budget of [100, 1_000, 3_000, 100_000]) {
      expect(planHistory(turns, 50, budget, 2_000, stored.map(estimateTextTokens))).toEqual(planHistory(turns, 50, budget, 2_000));
    }
  });
});
