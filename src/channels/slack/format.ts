import slackifyMarkdown from 'slackify-markdown';
import { splitMessage } from '../kit/chunk.js';
import { clip } from '../../lib/text.js';

/**
 * Markdown → Slack mrkdwn, split below Slack's limits. Slack accepts up to 40,000 characters
 * of `text` but recommends 4,000 per message; pieces stay under PIECE_LIMIT after formatting.
 */
export const PIECE_LIMIT = 3_900;
/** Markdown is cut first (formatting grows it a little: entities, link syntax); a piece that still grows past the limit is cut finer. */
const MARKDOWN_LIMIT = 3_500;
/** The status message is a few short lines; anything longer is clipped. */
export const STATUS_LIMIT = 3_000;

const LINK = /<(?:https?|mailto|ftp):[^\s<>|]+(?:\|[^<>]*)?>/g;
const ENTITY = /&(?:amp|lt|gt);/g;
const FENCE = /```[\s\S]*?(?:```|$)/g;

/**
 * Escapes what Slack would read as a control sequence: `<` and `>` (so a model's `<!channel>`
 * or `<@U…>` never pings anyone) and `&`, keeping the links the converter produced and the
 * entities it already wrote.
 */
function escapeControl(segment: string): string {
  const keep: string[] = [];
  const marked = segment.replace(new RegExp(`${LINK.source}|${ENTITY.source}`, 'g'), (m) => {
    keep.push(m);
    return `\u0000${keep.length - 1}\u0000`;
  });
  const escaped = marked.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return escaped.replace(/\u0000(\d+)\u0000/g, (_m, i: string) => keep[Number(i)]!);
}

/** Text outside code: as escapeControl, but a `>` that starts a line is a quote marker and stays. */
function escapeText(segment: string): string {
  const quotes: string[] = [];
  const protectedQuotes = segment.replace(/^([ \t]*)>/gm, (_m, indent: string) => {
    quotes.push(indent);
    return `\u0001${quotes.length - 1}\u0001`;
  });
  return escapeControl(protectedQuotes).replace(/\u0001(\d+)\u0001/g, (_m, i: string) => `${quotes[Number(i)]!}>`);
}

/** One piece of Markdown as Slack mrkdwn: bold, italics, links, lists, code blocks, escaped. */
export function toMrkdwn(markdown: string): string {
  const converted = slackifyMarkdown(markdown).replace(/\n+$/, '');
  let out = '';
  let last = 0;
  for (const match of converted.matchAll(FENCE)) {
    // Outside code, the converter writes a Markdown hard break as "\\\n", which Slack shows literally.
    out += escapeText(converted.slice(last, match.index).replace(/\\\n/g, '\n'));
    out += escapeControl(match[0]);
    last = match.index + match[0].length;
  }
  out += escapeText(converted.slice(last).replace(/\\\n/g, '\n'));
  return out;
}

/** A Markdown answer as mrkdwn pieces of at most `limit` characters, in order, cut on paragraphs first. */
export function slackPieces(markdown: string, limit = PIECE_LIMIT, markdownLimit = Math.min(MARKDOWN_LIMIT, limit)): string[] {
  const pieces: string[] = [];
  for (const piece of splitMessage(markdown, markdownLimit)) {
    const formatted = toMrkdwn(piece);
    if (formatted.length <= limit) {
      if (formatted.trim()) pieces.push(formatted);
    } else if (markdownLimit > 200) {
      pieces.push(...slackPieces(piece, limit, Math.floor(markdownLimit / 2)));
    } else {
      for (let i = 0; i < formatted.length; i += limit) pieces.push(formatted.slice(i, i + limit));
    }
  }
  return pieces;
}

/** Progress lines as a status message: plain text, escaped, clipped. */
export function statusText(text: string): string {
  const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return clip(escaped, STATUS_LIMIT);
}

/** Plain text (a user's question) escaped for mrkdwn. */
export function escapePlain(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
