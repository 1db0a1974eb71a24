/** Text and size helpers for every layer: one cut, one clip, one way to write a size. */

/**
 * The first `max` UTF-16 units of `text`, one fewer when the cut would split a surrogate pair
 * (half an emoji shows as U+FFFD, and Redis' cjson refuses a lone surrogate).
 */
export function cutAt(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return '';
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/**
 * `text` whole when it has at most `max` characters; else its head and `marker`, `max` characters
 * in all (the marker counts), cut as `cutAt` cuts.
 */
export function clip(text: string, max: number, marker = '…'): string {
  return text.length <= max ? text : `${cutAt(text, Math.max(0, max - marker.length))}${marker}`;
}

/** A size as people read it, in binary units (1 KB = 1,024 bytes): "70 B", "1 KB", "1.5 KB", "5.7 MB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${round1(n / 1024)} KB`;
  return `${round1(n / (1024 * 1024))} MB`;
}

/**
 * A size in decimal units (1 kB = 1,000 bytes): only for a limit set in decimal (ATTACHMENT_MAX_BYTES,
 * IMAGE_MAX_BYTES, Telegram's 20 MB) and the sizes compared with it, so "over the 20 MB limit"
 * shows the number as it was set. Everything else uses `formatBytes`.
 */
export function formatDecimalBytes(n: number): string {
  if (n < 1_000) return `${n} B`;
  if (n < 1_000_000) return `${round1(n / 1_000)} kB`;
  return `${round1(n / 1_000_000)} MB`;
}

function round1(x: number): string {
  return x.toFixed(1).replace(/\.0$/, '');
}
