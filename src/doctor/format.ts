import type { CheckResult } from './types.js';

const SYMBOL = { ok: '✓', fail: '✗', skip: '–' } as const;
const COLOUR = { ok: '\x1b[32m', fail: '\x1b[31m', skip: '\x1b[2m' } as const;
const RESET = '\x1b[0m';
/** A longer "found" is not padded (it pushes its own fix to the right) so one long line does not widen every row. */
const MAX_FOUND_WIDTH = 72;

/** A secret as it may be shown: its first 4 characters and an ellipsis. */
export function maskSecret(secret: string): string {
  return `${secret.slice(0, 4)}…`;
}

/** Replaces every occurrence of each secret (4 characters or more) in `text` by its masked form. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of [...secrets].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length)) out = out.split(secret).join(maskSecret(secret));
  return out;
}

/** The table: check, ✓/✗/–, what was found, the fix; plain column padding; colour only when asked (a TTY). */
export function formatTable(results: readonly CheckResult[], options: { colour?: boolean } = {}): string {
  const header = { name: 'check', status: ' ', found: 'found', fix: 'fix' };
  const nameWidth = Math.max(header.name.length, ...results.map((r) => r.name.length));
  const foundWidth = Math.min(MAX_FOUND_WIDTH, Math.max(header.found.length, ...results.map((r) => r.found.length)));
  const anyFix = results.some((r) => r.fix);
  const line = (name: string, symbol: string, found: string, fix: string | undefined) =>
    (fix ? `${name.padEnd(nameWidth)}  ${symbol}  ${found.padEnd(foundWidth)}  ${fix}` : `${name.padEnd(nameWidth)}  ${symbol}  ${found}`).trimEnd();
  const rows = results.map((r) => {
    const symbol = options.colour ? `${COLOUR[r.status]}${SYMBOL[r.status]}${RESET}` : SYMBOL[r.status];
    return line(r.name, symbol, r.found, r.fix);
  });
  return [line(header.name, header.status, header.found, anyFix ? header.fix : undefined), ...rows].join('\n');
}

/** "9 checks: 7 ok, 1 failed, 1 skipped". */
export function summary(results: readonly CheckResult[]): string {
  const count = (s: CheckResult['status']) => results.filter((r) => r.status === s).length;
  return `${results.length} checks: ${count('ok')} ok, ${count('fail')} failed, ${count('skip')} skipped`;
}
