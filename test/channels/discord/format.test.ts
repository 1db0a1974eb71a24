import { describe, expect, it } from 'vitest';
import { fitStatus, toDiscordMarkdown } from '../../../src/channels/discord/format.js';
import { splitMessage } from '../../../src/channels/kit/chunk.js';

describe('toDiscordMarkdown', () => {
  it('leaves what Discord renders natively as it is', () => {
    const text = '# Title\n\n**bold**, *italic*, ~~gone~~, `code`, [a link](https://example.com)\n\n> quoted\n\n- one\n- two\n\n1. first';
    expect(toDiscordMarkdown(text)).toBe(text);
  });

  it('turns a table into a code block so its columns stay aligned', () => {
    const text = 'Results:\n\n| name | n |\n|------|--:|\n| a    | 1 |\n| b    | 2 |\n\nDone.';
    expect(toDiscordMarkdown(text)).toBe('Results:\n\n```\n| name | n |\n|------|--:|\n| a    | 1 |\n| b    | 2 |\n```\n\nDone.');
  });

  it('keeps a line of pipes that is not a table (no separator row) as text', () => {
    expect(toDiscordMarkdown('| just | pipes |\nnext')).toBe('| just | pipes |\nnext');
  });

  it('makes headings Discord lacks (#### and deeper) bold, drops horizontal rules, turns images into links', () => {
    expect(toDiscordMarkdown('#### Details ####\ntext\n\n---\n\nmore ![chart](https://x.test/c.png "title") and ![](https://x.test/d.png)')).toBe(
      '**Details**\ntext\n\nmore [chart](https://x.test/c.png) and [image](https://x.test/d.png)',
    );
  });

  it('changes nothing inside code blocks or inline code', () => {
    const text = '```md\n#### not a heading\n| a | b |\n|---|---|\n---\n![x](y)\n```\nand `![x](y)` inline';
    expect(toDiscordMarkdown(text)).toBe(text);
  });

  it('a ~~~ fence is a code block too, closed only by ~~~', () => {
    const text = '~~~\n```\n#### inside\n~~~\n#### outside';
    expect(toDiscordMarkdown(text)).toBe('~~~\n```\n#### inside\n~~~\n**outside**');
  });
});

describe('fitStatus', () => {
  it('keeps short text as it is', () => {
    expect(fitStatus('• one\n• two')).toBe('• one\n• two');
  });

  it('keeps the newest lines that fit in the limit', () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i} ${'x'.repeat(290)}`);
    const fitted = fitStatus(lines.join('\n'));
    expect(fitted.length).toBeLessThanOrEqual(2000);
    expect(fitted.split('\n')).toEqual(lines.slice(-6));
  });

  it('cuts a single line longer than a message', () => {
    const fitted = fitStatus('y'.repeat(2500));
    expect(fitted).toHaveLength(2000);
    expect(fitted.endsWith('…')).toBe(true);
  });
});

describe("a long answer split at Discord's 2,000 characters", () => {
  it('gives pieces under the limit, each with balanced code fences, losing no line', () => {
    const code = Array.from({ length: 80 }, (_, i) => `console.log(${i}); // ${'-'.repeat(20)}`).join('\n');
    const answer = `Intro paragraph.\n\n\`\`\`js\n${code}\n\`\`\`\n\n${'Closing words. '.repeat(120)}`;
    expect(answer.length).toBeGreaterThan(4_000);
    const pieces = splitMessage(toDiscordMarkdown(answer), 2000);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    for (const p of pieces) {
      expect(p.length).toBeLessThanOrEqual(2000);
      expect((p.match(/^```/gm) ?? []).length % 2).toBe(0);
    }
    const joined = pieces.join('\n');
    for (let i = 0; i < 80; i++) expect(joined).toContain(`console.log(${i});`);
    // A piece that continues the code block reopens it with its language.
    expect(pieces[1]!.startsWith('```js\n')).toBe(true);
  });
});
