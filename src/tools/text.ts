/** Text helpers shared by the tools. */

/** Git's heuristic: a NUL byte in the first 8,000 bytes means binary. */
export function looksBinary(buf: Uint8Array): boolean {
  return buf.subarray(0, 8000).includes(0);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${round1(n / 1024)} KB`;
  return `${round1(n / (1024 * 1024))} MB`;
}

function round1(x: number): string {
  return x.toFixed(1).replace(/\.0$/, '');
}

/** `s` cut to at most `max` characters, ending in "…" when cut. */
export function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, Math.max(0, max - 1))}…`;
}

/** Lines of `text`; a final newline does not start an extra empty line. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}
