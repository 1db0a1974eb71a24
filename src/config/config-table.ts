import { envSchema } from './schema.js';
import { CONFIG_DOCS, OUTSIDE_SCHEMA, type VariableDoc } from './docs.js';

/** README's configuration table: rendered from CONFIG_DOCS (docs.ts), checked against envSchema, and placed between README's markers. */

export const TABLE_START = '<!-- config-table:start -->';
export const TABLE_END = '<!-- config-table:end -->';

const cell = (s: string) => s.replace(/(?<!\\)\|/g, '\\|');

/**
 * The Markdown table (header included, no trailing newline) for `docs`, checked against the
 * schema's variables: throws one error naming every variable without a row, every row for a name
 * that is no variable, and every broken shared row.
 */
export function configTable(
  docs: Readonly<Record<string, VariableDoc>> = CONFIG_DOCS,
  schemaKeys: readonly string[] = Object.keys(envSchema.shape),
  outside: readonly string[] = OUTSIDE_SCHEMA,
): string {
  const problems: string[] = [];
  const known = new Set([...schemaKeys, ...outside]);
  for (const key of schemaKeys) if (!(key in docs)) problems.push(`${key} is in envSchema but has no entry in CONFIG_DOCS`);
  for (const key of outside) if (schemaKeys.includes(key)) problems.push(`${key} is in envSchema now: take it out of OUTSIDE_SCHEMA`);
  const rows: string[] = [];
  for (const [key, doc] of Object.entries(docs)) {
    if (!known.has(key)) problems.push(`${key} has an entry in CONFIG_DOCS but is not a variable of envSchema (nor in OUTSIDE_SCHEMA)`);
    if ('sameRowAs' in doc) {
      const head = docs[doc.sameRowAs];
      if (head === undefined || 'sameRowAs' in head || !(head.also ?? []).some((name) => name === key))
        problems.push(`${key} says sameRowAs ${doc.sameRowAs}, whose entry does not list it in \`also\``);
      continue;
    }
    for (const other of doc.also ?? []) {
      const entry = docs[other];
      if (entry === undefined || !('sameRowAs' in entry) || entry.sameRowAs !== key)
        problems.push(`${key} lists ${other} in \`also\`, whose entry is not { sameRowAs: '${key}' }`);
    }
    for (const [column, text] of [
      ['meaning', doc.meaning],
      ['default', doc.default],
    ] as const) {
      if (text.trim() === '' || /[\r\n]/.test(text)) problems.push(`${key}: the ${column} must be one non-empty line`);
    }
    const names = [key, ...(doc.also ?? [])].map((name) => `\`${name}\``).join(doc.join === '+' ? ' + ' : ', ');
    rows.push(`| ${names} | ${cell(doc.meaning)} | ${cell(doc.default)} |`);
  }
  if (problems.length > 0) throw new Error(`configuration docs (src/config/docs.ts):\n  ${problems.join('\n  ')}`);
  return ['| variable | meaning | default |', '|---|---|---|', ...rows].join('\n');
}

/** Where README's table sits: the text between the markers, or an error when they are not there once each, in order. */
function markers(readme: string): { from: number; to: number } {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start < 0 || end < start || readme.indexOf(TABLE_START, start + 1) >= 0 || readme.indexOf(TABLE_END, end + 1) >= 0) {
    throw new Error(`README.md must hold ${TABLE_START} and then ${TABLE_END}, once each`);
  }
  return { from: start + TABLE_START.length, to: end };
}

/** README's configuration table as it stands (between the markers, without the blank lines around it). */
export function readmeConfigTable(readme: string): string {
  const { from, to } = markers(readme);
  return readme.slice(from, to).trim();
}

/** `readme` with `table` between the markers (a blank line on each side, so the table renders). */
export function withConfigTable(readme: string, table: string): string {
  const { from, to } = markers(readme);
  return `${readme.slice(0, from)}\n\n${table}\n\n${readme.slice(to)}`;
}
