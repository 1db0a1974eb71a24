/**
 * Splits a Markdown answer into pieces of at most `limit` characters (UTF-16 units, which is
 * what Telegram and Discord count), preferring paragraph breaks, then line breaks, then spaces.
 * A piece never ends inside a code block: an open fence is closed at the end of the piece and
 * reopened (with its language) at the start of the next, so every piece renders on its own.
 */
import { cutAt } from '../../lib/text.js';

const CLOSE = '\n```';

export function splitMessage(text: string, limit: number): string[] {
  if (limit < 20) throw new Error('splitMessage needs a limit of at least 20 characters');
  const pieces: string[] = [];
  let rest = text.trim();
  let reopen = '';
  while (rest.length > 0) {
    const budget = limit - reopen.length;
    if (rest.length <= budget) {
      pieces.push(reopen + rest);
      break;
    }
    let cut = bestCut(rest, budget);
    let fence = openFence(reopen + rest.slice(0, cut));
    if (fence !== null) {
      // The piece ends inside a code block: leave room for the closing fence.
      cut = bestCut(rest, budget - CLOSE.length);
      fence = openFence(reopen + rest.slice(0, cut));
    }
    const piece = rest.slice(0, cut);
    const body = (reopen + piece).replace(/\s+$/, '');
    pieces.push(fence !== null ? `${body}${CLOSE}` : body);
    rest = rest.slice(cut).replace(/^\s*\n/, '');
    if (fence === null) rest = rest.replace(/^\s+/, '');
    reopen = fence !== null ? `\`\`\`${fence}\n` : '';
  }
  return pieces.filter((p) => p.trim().length > 0);
}

/** The best place to cut `text` at or before `max`: a paragraph, a line, a space, else hard. */
function bestCut(text: string, max: number): number {
  const window = text.slice(0, max + 1);
  const floor = Math.floor(max / 2);
  for (const sep of ['\n\n', '\n', ' ']) {
    const at = window.lastIndexOf(sep);
    if (at >= floor) return at + sep.length;
  }
  // No separator in the second half: cut hard, but never between the halves of a surrogate pair.
  return cutAt(text, max).length;
}

/** The language of the code fence left open at the end of `text` ('' for none given), or null. */
function openFence(text: string): string | null {
  let open: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^\s*```\s*([\w+#.-]*)/.exec(line);
    if (!m) continue;
    open = open === null ? (m[1] ?? '') : null;
  }
  return open;
}
