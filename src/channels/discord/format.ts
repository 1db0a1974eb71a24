import { clip } from '../../lib/text.js';
import { MESSAGE_LIMIT } from './ids.js';

/**
 * The model's Markdown as Discord shows it. Discord renders most of it natively (bold, italics,
 * code, fences, quotes, lists, masked links, headings # to ###), so only what it lacks is
 * rewritten: tables become a code block (columns stay aligned), deeper headings become bold,
 * horizontal rules go, images become links. Code blocks and inline code are left as they are.
 */
export function toDiscordMarkdown(markdown: string): string {
  const out: string[] = [];
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  let fence: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== null) {
      out.push(line);
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = null;
      continue;
    }
    if (marker) {
      fence = marker;
      out.push(line);
      continue;
    }
    const table = tableAt(lines, i);
    if (table > 0) {
      out.push('```', ...lines.slice(i, i + table).map((l) => l.trim()), '```');
      i += table - 1;
      continue;
    }
    out.push(proseLine(line));
  }
  return out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** How many lines from `i` form a Markdown table (a header row, a separator row, body rows), 0 if none. */
function tableAt(lines: string[], i: number): number {
  const row = (l: string | undefined) => l !== undefined && /^\s*\|.*\|\s*$/.test(l);
  const separator = (l: string | undefined) => l !== undefined && /^\s*\|(\s*:?-{2,}:?\s*\|)+\s*$/.test(l);
  if (!row(lines[i]) || !separator(lines[i + 1])) return 0;
  let n = 2;
  while (row(lines[i + n])) n++;
  return n;
}

function proseLine(line: string): string {
  if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) return '';
  const heading = /^\s{0,3}#{4,6}\s+(.*?)\s*#*\s*$/.exec(line);
  if (heading) return `**${heading[1]}**`;
  // Outside inline code only: `![alt](url)` → `[alt](url)`.
  return line
    .split(/(`[^`]*`)/)
    .map((part, k) =>
      k % 2 === 1 ? part : part.replace(/!\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g, (_m, alt: string, url: string) => `[${alt.trim() || 'image'}](${url})`),
    )
    .join('');
}

/**
 * A status message's text within Discord's limit: the newest lines are kept (progress is read
 * from the bottom), and a single line too long for a message is cut.
 */
export function fitStatus(text: string, limit = MESSAGE_LIMIT): string {
  const lines = text.trim().split('\n');
  while (lines.length > 1 && lines.join('\n').length > limit) lines.shift();
  const fitted = lines.join('\n');
  return clip(fitted, limit);
}
