/** Text helpers shared by the tools. */

/** Git's heuristic: a NUL byte in the first 8,000 bytes means binary. */
export function looksBinary(buf: Uint8Array): boolean {
  return buf.subarray(0, 8000).includes(0);
}

/** Lines of `text`; a final newline does not start an extra empty line. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}
