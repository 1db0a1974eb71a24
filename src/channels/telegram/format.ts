import { Lexer, type Token, type Tokens } from 'marked';

/**
 * Markdown from the model → the HTML subset Telegram accepts (parse_mode HTML): b, i, s, code,
 * pre, a, blockquote. Telegram has no <p>, <br>, <ul> or <h1>: blocks are separated by blank
 * lines, list items get bullets, headings become bold. Every text node is escaped, so the
 * output is always well formed; the visible text is never longer than the Markdown source
 * (tables stay as they were, in a <pre>), so a piece cut to the limit still fits after rendering.
 */
export function toTelegramHtml(markdown: string): string {
  return blocks(new Lexer({ gfm: true }).lex(markdown), '', { quoted: false }).trim();
}

/** Telegram's nesting rules: a blockquote can't hold another, and a link can't hold code. */
interface Within {
  quoted: boolean;
  linked?: boolean;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const escapeAttr = (text: string) => escapeHtml(text).replace(/"/g, '&quot;');

/** Link targets Telegram accepts in <a href>; a relative path or anything else stays text. */
const LINKABLE = /^(https?:\/\/|tg:\/\/|mailto:)/i;

function blocks(tokens: readonly Token[], indent: string, within: Within): string {
  const out: string[] = [];
  for (const token of tokens) {
    const rendered = block(token as Tokens.Generic, indent, within);
    if (rendered !== '') out.push(rendered);
  }
  return out.join('\n\n');
}

function block(token: Tokens.Generic, indent: string, within: Within): string {
  switch (token.type) {
    case 'space':
    case 'def':
      return '';
    case 'paragraph':
    case 'text':
      return indent + inline(token.tokens ?? [{ type: 'text', raw: token.text, text: token.text }], within);
    case 'heading':
      return `${indent}<b>${inline(token.tokens ?? [], within)}</b>`;
    case 'code': {
      const code = (token as Tokens.Code).text;
      const lang = (token as Tokens.Code).lang?.trim().split(/\s+/)[0];
      const cls = lang ? ` class="language-${escapeAttr(lang)}"` : '';
      return `<pre><code${cls}>${escapeHtml(code)}</code></pre>`;
    }
    case 'blockquote': {
      const inner = blocks(token.tokens ?? [], '', { quoted: true });
      return within.quoted ? inner : `<blockquote>${inner}</blockquote>`;
    }
    case 'list':
      return list(token as Tokens.List, indent, within);
    case 'hr':
      return '———';
    case 'table':
      return `<pre>${escapeHtml(token.raw.trim())}</pre>`;
    case 'html':
      return indent + escapeHtml(token.raw.trim());
    default:
      return indent + escapeHtml(token.raw.trim());
  }
}

function list(token: Tokens.List, indent: string, within: Within): string {
  const start = typeof token.start === 'number' ? token.start : 1;
  const items = token.items.map((item, i) => {
    const marker = token.ordered ? `${start + i}.` : '•';
    const box = item.task ? (item.checked ? '☑ ' : '☐ ') : '';
    const [first, ...rest] = item.tokens.filter((t) => t.type !== 'checkbox' && t.type !== 'space');
    const head =
      first && (first.type === 'text' || first.type === 'paragraph')
        ? inline((first as Tokens.Text).tokens ?? [first], within)
        : first
          ? block(first as Tokens.Generic, '', within)
          : '';
    const nested = rest.map((t) => block(t as Tokens.Generic, `${indent}  `, within)).filter((s) => s !== '');
    return [`${indent}${marker} ${box}${head}`, ...nested].join('\n');
  });
  return items.join(token.loose ? '\n\n' : '\n');
}

function inline(tokens: readonly Token[], within: Within): string {
  return tokens.map((t) => span(t as Tokens.Generic, within)).join('');
}

function span(token: Tokens.Generic, within: Within): string {
  switch (token.type) {
    case 'text':
      return token.tokens ? inline(token.tokens, within) : escapeHtml(token.text as string);
    case 'escape':
      return escapeHtml(token.text as string);
    case 'strong':
      return `<b>${inline(token.tokens ?? [], within)}</b>`;
    case 'em':
      return `<i>${inline(token.tokens ?? [], within)}</i>`;
    case 'del':
      return `<s>${inline(token.tokens ?? [], within)}</s>`;
    case 'codespan':
      return within.linked ? escapeHtml(token.text as string) : `<code>${escapeHtml(token.text as string)}</code>`;
    case 'br':
      return '\n';
    case 'link': {
      const { href, tokens } = token as Tokens.Link;
      if (within.linked) return inline(tokens, within);
      const text = inline(tokens, { ...within, linked: true });
      if (LINKABLE.test(href)) return `<a href="${escapeAttr(href)}">${text}</a>`;
      // A workspace path or other target Telegram cannot link: keep it readable as text.
      return href && href !== (token as Tokens.Link).text ? `${text} (${escapeHtml(href)})` : text;
    }
    case 'image': {
      const { href, text } = token as Tokens.Image;
      return LINKABLE.test(href) ? `<a href="${escapeAttr(href)}">${escapeHtml(text || href)}</a>` : escapeHtml(text || href);
    }
    default:
      // Inline HTML and anything unknown: shown as the user's literal text.
      return escapeHtml(token.raw);
  }
}

/** What Telegram counts against its limit: the text after entity parsing (tags gone, entities decoded). */
export function visibleLength(html: string): number {
  return html.replace(/<[^>]*>/g, '').replace(/&(lt|gt|amp|quot|#\d+|#x[0-9a-f]+);/gi, '_').length;
}
