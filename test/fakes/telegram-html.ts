/**
 * The Bot API's HTML entity parsing (parse_mode HTML), for the fake Bot API and for tests that
 * check a message is valid Telegram HTML: only Telegram's tags, properly nested by its rules,
 * and only its character entities.
 */

/** Entity parsing as the Bot API does it for parse_mode HTML: the visible text, or Telegram's error. */
export function parseText(text: unknown, parseMode: unknown): { text: string } | { error: string } {
  if (typeof text !== 'string' || text.trim() === '') return { error: 'message text is empty' };
  let visible = text;
  if (parseMode === 'HTML') {
    const parsed = parseTelegramHtml(text);
    if ('error' in parsed) return { error: `can't parse entities: ${parsed.error}` };
    visible = parsed.text;
  } else if (parseMode !== undefined) {
    return { error: `unsupported parse_mode ${String(parseMode)} in this fake` };
  }
  if (visible.trim() === '') return { error: 'message text is empty' };
  if (visible.length > 4096) return { error: 'message is too long' };
  return { text: visible };
}

const TAGS = new Set(['b', 'strong', 'i', 'em', 'u', 'ins', 's', 'strike', 'del', 'span', 'tg-spoiler', 'a', 'code', 'pre', 'blockquote', 'tg-emoji']);
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"' };

/** Telegram's HTML: only its tags, properly nested, and only &lt; &gt; &amp; &quot; and numeric entities. */
export function parseTelegramHtml(html: string): { text: string } | { error: string } {
  const stack: string[] = [];
  let out = '';
  let i = 0;
  while (i < html.length) {
    const ch = html[i]!;
    if (ch === '<') {
      const end = html.indexOf('>', i);
      if (end < 0) return { error: `Unclosed start tag at byte offset ${i}` };
      const inner = html.slice(i + 1, end);
      const closing = inner.startsWith('/');
      const name = (closing ? inner.slice(1) : inner).trim().split(/\s/)[0]!.toLowerCase();
      if (!TAGS.has(name)) return { error: `Unsupported start tag "${name}" at byte offset ${i}` };
      if (closing) {
        if (stack.pop() !== name) return { error: `Unmatched end tag at byte offset ${i}, expected "</${stack.at(-1) ?? ''}>", found "</${name}>"` };
      } else {
        if (name === 'a' && !/\bhref\s*=\s*"[^"]*"/.test(inner)) return { error: `Can't find "href" attribute of "a" tag at byte offset ${i}` };
        // "blockquote entities can't be nested"; links, code and pre can't contain each other.
        if (name === 'blockquote' && stack.includes('blockquote')) return { error: `Blockquote entities can't be nested at byte offset ${i}` };
        const holder = stack.find((t) => t === 'a' || t === 'code');
        if (['a', 'code', 'pre'].includes(name) && holder) return { error: `Can't nest "${name}" inside "${holder}" at byte offset ${i}` };
        stack.push(name);
      }
      i = end + 1;
      continue;
    }
    if (ch === '&') {
      const m = /^&(lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);/.exec(html.slice(i));
      if (!m) return { error: `Character entity is not terminated at byte offset ${i}` };
      const name = m[1]!;
      out += name.startsWith('#x')
        ? String.fromCodePoint(parseInt(name.slice(2), 16))
        : name.startsWith('#')
          ? String.fromCodePoint(Number(name.slice(1)))
          : ENTITIES[name]!;
      i += m[0].length;
      continue;
    }
    if (ch === '>') return { error: `Unexpected ">" at byte offset ${i}` };
    out += ch;
    i += 1;
  }
  if (stack.length > 0) return { error: `Can't find end tag corresponding to start tag "${stack.at(-1)}"` };
  return { text: out };
}
