import { describe, expect, it } from 'vitest';
import { PIECE_LIMIT, slackPieces, statusText, toMrkdwn } from '../../../src/channels/slack/format.js';

const ZWSP = '\u200b';
const strip = (s: string) => s.replaceAll(ZWSP, '');

describe('Markdown → Slack mrkdwn', () => {
  it('converts bold, italics, links and strikethrough', () => {
    expect(strip(toMrkdwn('**bold** and _it_ and ~~gone~~'))).toBe('*bold* and _it_ and ~gone~');
    expect(toMrkdwn('[the docs](https://example.com/a?b=1&c=2)')).toBe('<https://example.com/a?b=1&c=2|the docs>');
    expect(toMrkdwn('<https://example.com>')).toBe('<https://example.com|https://example.com>');
  });

  it('keeps code blocks as Slack code blocks, escaped, without the language tag', () => {
    expect(toMrkdwn('Run:\n\n```sh\nls -l && echo <x>\n```')).toBe('Run:\n\n```\nls -l &amp;&amp; echo &lt;x&gt;\n```');
    expect(toMrkdwn('inline `a < b` here')).toBe('inline `a &lt; b` here');
  });

  it('turns lists into bullets and headings into bold lines', () => {
    expect(toMrkdwn('- one\n- two')).toBe('•   one\n•   two');
    expect(toMrkdwn('1. first\n2. second')).toBe('1.  first\n2.  second');
    expect(strip(toMrkdwn('# Title\n\ntext'))).toBe('*Title*\n\ntext');
  });

  it('never lets the model ping anyone or write control sequences', () => {
    expect(toMrkdwn('hey <!channel> and <@U123> & <!here>')).toBe('hey &lt;!channel&gt; and &lt;@U123&gt; &amp; &lt;!here&gt;');
    expect(toMrkdwn('```\n<!everyone>\n```')).toBe('```\n&lt;!everyone&gt;\n```');
  });

  it('keeps quote markers, escapes other >', () => {
    expect(toMrkdwn('> quoted a > b')).toBe('> quoted a &gt; b');
  });

  it('a Markdown hard break is a plain newline, not a visible backslash', () => {
    expect(toMrkdwn('line one  \nline two')).toBe('line one\nline two');
  });
});

describe('splitting long answers below Slack’s limits', () => {
  it('keeps a short answer whole', () => {
    expect(slackPieces('just this')).toEqual(['just this']);
  });

  it('cuts on paragraph boundaries, in order, each piece under the limit', () => {
    const paragraphs = Array.from({ length: 40 }, (_, i) => `Paragraph ${i + 1}: ${'lorem ipsum dolor '.repeat(12).trim()}.`);
    const pieces = slackPieces(paragraphs.join('\n\n'));
    expect(pieces.length).toBeGreaterThan(1);
    for (const p of pieces) expect(p.length).toBeLessThanOrEqual(PIECE_LIMIT);
    expect(pieces.flatMap((p) => p.split('\n\n'))).toEqual(paragraphs);
  });

  it('closes and reopens a code block cut in two', () => {
    const code = Array.from({ length: 400 }, (_, i) => `line ${i} of the program`).join('\n');
    const pieces = slackPieces(`Here:\n\n\`\`\`\n${code}\n\`\`\``);
    expect(pieces.length).toBeGreaterThan(1);
    for (const p of pieces) {
      expect(p.length).toBeLessThanOrEqual(PIECE_LIMIT);
      expect(p.match(/```/g)?.length).toBe(2);
    }
    const lines = pieces.flatMap((p) =>
      p
        .replace(/^[\s\S]*?```\n/, '')
        .replace(/\n```[\s\S]*$/, '')
        .split('\n'),
    );
    expect(lines).toEqual(code.split('\n'));
  });

  it('cuts finer when formatting makes a piece grow past the limit', () => {
    // Every & becomes &amp; (5 characters): 3,000 of them would pass any limit as one piece.
    const pieces = slackPieces(`${'& '.repeat(3_000).trim()}`, 4_000);
    for (const p of pieces) expect(p.length).toBeLessThanOrEqual(4_000);
    expect(pieces.join(' ').match(/&amp;/g)).toHaveLength(3_000);
  });
});

describe('status text', () => {
  it('is escaped and clipped', () => {
    expect(statusText('• read <notes.md> & more')).toBe('• read &lt;notes.md&gt; &amp; more');
    const long = statusText('x'.repeat(5_000));
    expect(long.length).toBe(3_000);
    expect(long.endsWith('…')).toBe(true);
  });
});
