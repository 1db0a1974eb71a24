import { describe, expect, it } from 'vitest';
import { splitMessage } from '../../src/channels/kit/chunk.js';

const fences = (s: string) => s.split('\n').filter((l) => /^\s*```/.test(l)).length;

describe('splitMessage', () => {
  it('keeps a short message whole', () => {
    expect(splitMessage('hello\n\nworld', 100)).toEqual(['hello\n\nworld']);
  });

  it('cuts at paragraph breaks first, in order, within the limit', () => {
    const paras = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} ${'word '.repeat(30).trim()}`);
    const pieces = splitMessage(paras.join('\n\n'), 400);
    expect(pieces.length).toBeGreaterThan(1);
    for (const p of pieces) expect(p.length).toBeLessThanOrEqual(400);
    expect(pieces.join('\n\n')).toBe(paras.join('\n\n'));
    for (const p of pieces) expect(p.startsWith('Paragraph')).toBe(true);
  });

  it('falls back to lines, then spaces, then a hard cut', () => {
    const lines = Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n');
    const byLine = splitMessage(lines, 60);
    expect(byLine.every((p) => p.length <= 60 && !p.startsWith('\n'))).toBe(true);
    expect(byLine.join('\n')).toBe(lines);
    const noBreaks = 'x'.repeat(250);
    const hard = splitMessage(noBreaks, 100);
    expect(hard.map((p) => p.length)).toEqual([100, 100, 50]);
  });

  it('never leaves a code block open: fences are closed and reopened with their language', () => {
    const code = Array.from({ length: 80 }, (_, i) => `print(${i})`).join('\n');
    const text = `Here is the script:\n\n\`\`\`python\n${code}\n\`\`\`\n\nThat is all.`;
    const pieces = splitMessage(text, 300);
    expect(pieces.length).toBeGreaterThan(2);
    for (const p of pieces) {
      expect(p.length).toBeLessThanOrEqual(300);
      expect(fences(p) % 2).toBe(0);
    }
    expect(pieces[1]!.startsWith('```python\n')).toBe(true);
    const printed = pieces.join('\n').match(/print\(\d+\)/g);
    expect(printed).toEqual(Array.from({ length: 80 }, (_, i) => `print(${i})`));
    expect(pieces.at(-1)!.endsWith('That is all.')).toBe(true);
  });

  it('does not split a surrogate pair', () => {
    const text = '😀'.repeat(30);
    const pieces = splitMessage(text, 21);
    expect(pieces.join('')).toBe(text);
    for (const p of pieces) expect(p.length).toBeLessThanOrEqual(21);
  });
});
