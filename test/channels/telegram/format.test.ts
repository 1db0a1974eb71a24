import { describe, expect, it } from 'vitest';
import { escapeHtml, toTelegramHtml, visibleLength } from '../../../src/channels/telegram/format.js';
import { splitMessage } from '../../../src/channels/kit/chunk.js';
import { parseTelegramHtml } from '../../fakes/telegram-server.js';

/** The fake's parser is Telegram's rules: the output must parse, and we compare the visible text. */
function visible(html: string): string {
  const parsed = parseTelegramHtml(html);
  if ('error' in parsed) throw new Error(`invalid Telegram HTML: ${parsed.error}\n${html}`);
  return parsed.text;
}

describe('telegram format: Markdown → Telegram HTML', () => {
  it('renders emphasis, code and strikethrough with Telegram tags', () => {
    expect(toTelegramHtml('**bold**, *italic*, ~~gone~~ and `x`')).toBe('<b>bold</b>, <i>italic</i>, <s>gone</s> and <code>x</code>');
  });

  it('escapes <, > and & everywhere, including inside code and raw HTML from the model', () => {
    const html = toTelegramHtml('a < b && c > d <script>alert(1)</script> `if (a<b && c)`');
    expect(html).toBe('a &lt; b &amp;&amp; c &gt; d &lt;script&gt;alert(1)&lt;/script&gt; <code>if (a&lt;b &amp;&amp; c)</code>');
    expect(visible(html)).toBe('a < b && c > d <script>alert(1)</script> if (a<b && c)');
  });

  it('renders fenced code as <pre><code class="language-…">, keeping its text exactly', () => {
    const md = 'Run:\n\n```python\nif a < b:\n    print("x & y")\n```';
    expect(toTelegramHtml(md)).toBe('Run:\n\n<pre><code class="language-python">if a &lt; b:\n    print("x &amp; y")</code></pre>');
  });

  it('turns headings bold and lists into bullet lines (Telegram has no h1, ul or br)', () => {
    const html = toTelegramHtml('# Plan\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n- [x] done\n- [ ] todo');
    expect(html).toBe('<b>Plan</b>\n\n• one\n• two\n  • nested\n\n1. first\n2. second\n\n• ☑ done\n• ☐ todo');
  });

  it('links http(s) targets with an escaped href; a workspace path stays readable text', () => {
    expect(toTelegramHtml('[docs](https://example.com/?a=1&b="2")')).toBe('<a href="https://example.com/?a=1&amp;b=&quot;2&quot;">docs</a>');
    expect(toTelegramHtml('see [notes](notes/a.md)')).toBe('see notes (notes/a.md)');
    expect(toTelegramHtml('javascript: [x](javascript:alert(1))')).not.toContain('<a');
  });

  it('follows Telegram’s nesting rules: no blockquote in a blockquote, no code inside a link', () => {
    expect(toTelegramHtml('> outer\n>> inner')).toBe('<blockquote>outer\n\ninner</blockquote>');
    expect(toTelegramHtml('[`run.sh`](https://e.com)')).toBe('<a href="https://e.com">run.sh</a>');
    expect(parseTelegramHtml('<blockquote>a<blockquote>b</blockquote></blockquote>')).toHaveProperty('error');
  });

  it('keeps quotes as blockquotes and tables as preformatted text', () => {
    expect(toTelegramHtml('> quoted **word**')).toBe('<blockquote>quoted <b>word</b></blockquote>');
    expect(toTelegramHtml('| a | b |\n|---|---|\n| 1 | 2 |')).toBe('<pre>| a | b |\n|---|---|\n| 1 | 2 |</pre>');
  });

  it('leaves snake_case, lone asterisks and underscores alone', () => {
    const html = toTelegramHtml('set max_retry_count to 5 * 3 and 2*4');
    expect(visible(html)).toBe('set max_retry_count to 5 * 3 and 2*4');
  });

  it('always produces HTML Telegram can parse, and never longer visible text than the Markdown', () => {
    const samples = [
      '**unclosed bold and `tick',
      '<b>not closed',
      '```\ncode without end',
      '> q1\n>> q2\n\n---\n\n![img](https://e.com/i.png) & ![rel](x.png)',
      '* a\n    * b\n        * c\n\n| x |\n|---|',
      '&amp; &lt; &#169; &nope;',
      '[a](<https://e.com/with space>) <https://auto.link> https://bare.link',
      '1) one\n2) two\n\nTerm\n: def',
    ];
    for (const md of samples) {
      const html = toTelegramHtml(md);
      expect(() => visible(html), md).not.toThrow();
      expect(visibleLength(html), md).toBeLessThanOrEqual(md.length);
      expect(visibleLength(html)).toBe(visible(html).length);
    }
  });

  it('every piece of a long answer split by the chunker renders on its own within 4,096 characters', () => {
    const para = (i: number) => `Paragraph ${i}: **important** detail with \`code\` & <tags> ${'word '.repeat(40).trim()}.`;
    const code = '```ts\n' + Array.from({ length: 60 }, (_, i) => `const v${i} = a < b && c > d; // ${i}`).join('\n') + '\n```';
    const md = [...Array.from({ length: 20 }, (_, i) => para(i)), code, ...Array.from({ length: 10 }, (_, i) => para(100 + i))].join('\n\n');
    const pieces = splitMessage(md, 4000);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    for (const piece of pieces) {
      const text = visible(toTelegramHtml(piece));
      expect(text.length).toBeLessThanOrEqual(4096);
    }
  });

  it('escapeHtml escapes exactly the three characters Telegram requires', () => {
    expect(escapeHtml(`<a href="x">&'`)).toBe(`&lt;a href="x"&gt;&amp;'`);
  });
});
