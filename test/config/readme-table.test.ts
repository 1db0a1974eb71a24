import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CONFIG_DOCS, OUTSIDE_SCHEMA, type VariableDoc } from '../../src/config/docs.js';
import { TABLE_END, TABLE_START, configTable, readmeConfigTable, withConfigTable } from '../../src/config/config-table.js';
import { envSchema } from '../../src/config/schema.js';
import { REPO } from '../helpers/processes.js';

const README = readFileSync(join(REPO, 'README.md'), 'utf8');
const SCHEMA_KEYS = Object.keys(envSchema.shape);
const HINT = "README.md's configuration table is not what src/config/docs.ts says: run npm run docs:config (and describe a new variable in src/config/docs.ts)";

/** The variables README's table names, row by row, read from the Markdown itself (not from the docs). */
function namesInTable(readme: string): string[][] {
  return readmeConfigTable(readme)
    .split('\n')
    .slice(2)
    .map((row) => [...(row.split(' | ')[0] ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!));
}

/** Whether README (or a changed copy of it, or of the docs) passes the checks below. */
function agrees(readme: string, docs: Readonly<Record<string, VariableDoc>> = CONFIG_DOCS): boolean {
  return readmeConfigTable(readme) === configTable(docs);
}

/** A copy of the docs (same order) with one change. */
function changed(edit: (docs: Record<string, VariableDoc>) => void): Record<string, VariableDoc> {
  const docs = structuredClone(CONFIG_DOCS) as Record<string, VariableDoc>;
  edit(docs);
  return docs;
}

const tsFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tsFiles(path) : path.endsWith('.ts') ? [path] : [];
  });

describe("README's configuration table", () => {
  it('is exactly what npm run docs:config writes from src/config/docs.ts', () => {
    expect(readmeConfigTable(README), HINT).toBe(configTable());
  });

  it('has one row per variable of envSchema (plus the ones read outside it), and no row for anything else', () => {
    const named = namesInTable(README).flat();
    expect(
      named.filter((name, i) => named.indexOf(name) !== i),
      'named twice',
    ).toEqual([]);
    expect(
      SCHEMA_KEYS.filter((key) => !named.includes(key)),
      'variables of envSchema without a row',
    ).toEqual([]);
    expect(
      named.filter((name) => !SCHEMA_KEYS.includes(name) && !(OUTSIDE_SCHEMA as readonly string[]).includes(name)),
      'rows naming no variable',
    ).toEqual([]);
    expect(namesInTable(README).every((names) => names.length > 0)).toBe(true);
  });

  it('keeps the grouped rows as they read', () => {
    const rows = readmeConfigTable(README).split('\n');
    expect(rows).toContain(
      '| `TELEGRAM_DM_POLICY`, `SLACK_DM_POLICY`, `DISCORD_DM_POLICY` | the same for one platform (wins over `DM_POLICY`) | `DM_POLICY` |',
    );
    expect(rows.some((row) => row.startsWith('| `SLACK_BOT_TOKEN` + `SLACK_SIGNING_SECRET` | '))).toBe(true);
    expect(rows.some((row) => row.startsWith('| `AGENT_RUN_TIMEOUT_MS` | ') && row.endsWith(' | `900000` (15 min) |'))).toBe(true);
  });

  it('documents variables read outside envSchema only when the product reads them and the schema does not have them', () => {
    const sources = tsFiles(join(REPO, 'src')).map((file) => readFileSync(file, 'utf8'));
    for (const name of OUTSIDE_SCHEMA) {
      expect(SCHEMA_KEYS, `${name} is in envSchema: take it out of OUTSIDE_SCHEMA`).not.toContain(name);
      expect(
        sources.some((code) => code.includes(`process.env.${name}`)),
        `nothing in src reads process.env.${name}`,
      ).toBe(true);
    }
  });
});

describe('the check itself (it can fail)', () => {
  it('sees a changed meaning, default or grouping in the docs', () => {
    expect(agrees(README)).toBe(true);
    expect(
      agrees(
        README,
        changed((d) => void Object.assign(d.REDIS_URL!, { meaning: 'Redis' })),
      ),
    ).toBe(false);
    expect(
      agrees(
        README,
        changed((d) => void Object.assign(d.AGENT_RUN_TIMEOUT_MS!, { default: '`900000`' })),
      ),
    ).toBe(false);
    expect(
      agrees(
        README,
        changed((d) => void Object.assign(d.SLACK_BOT_TOKEN!, { join: ',' })),
      ),
    ).toBe(false);
    // The order is the table's order.
    const { PORT, ...rest } = structuredClone(CONFIG_DOCS);
    expect(agrees(README, { ...rest, PORT })).toBe(false);
  });

  it('sees a README row edited, dropped or added by hand', () => {
    const table = readmeConfigTable(README);
    const rows = table.split('\n');
    const portRow = rows.find((row) => row.startsWith('| `PORT` | '))!;
    const edit = (next: string) => README.replace(table, next);
    expect(agrees(edit(table.replace(portRow, portRow.replace('`3000`', '`8080`'))))).toBe(false);
    expect(agrees(edit(rows.filter((row) => row !== portRow).join('\n')))).toBe(false);
    expect(agrees(edit(`${table}\n| \`NOT_A_VARIABLE\` | nothing | none |`))).toBe(false);
    expect(namesInTable(edit(`${table}\n| \`NOT_A_VARIABLE\` | nothing | none |`)).flat()).toContain('NOT_A_VARIABLE');
    expect(namesInTable(edit(rows.filter((row) => row !== portRow).join('\n'))).flat()).not.toContain('PORT');
  });

  it('refuses docs without a schema variable, with a name the schema lacks, or with a broken shared row', () => {
    expect(() => configTable(changed((d) => delete d.PORT))).toThrow('PORT is in envSchema but has no entry in CONFIG_DOCS');
    expect(() => configTable(changed((d) => void (d.NOT_A_VARIABLE = { meaning: 'nothing', default: 'none' })))).toThrow(
      'NOT_A_VARIABLE has an entry in CONFIG_DOCS but is not a variable of envSchema',
    );
    // A variable added to the schema with no docs.
    expect(() => configTable(CONFIG_DOCS, [...SCHEMA_KEYS, 'NEW_VARIABLE'])).toThrow('NEW_VARIABLE is in envSchema but has no entry');
    expect(() => configTable(changed((d) => void Object.assign(d.SLACK_BOT_TOKEN!, { also: [] })))).toThrow(
      'SLACK_SIGNING_SECRET says sameRowAs SLACK_BOT_TOKEN',
    );
    expect(() => configTable(changed((d) => void Object.assign(d.SLACK_SIGNING_SECRET!, { sameRowAs: 'DISCORD_TOKEN' })))).toThrow(
      'SLACK_BOT_TOKEN lists SLACK_SIGNING_SECRET',
    );
    expect(() => configTable(changed((d) => void Object.assign(d.PORT!, { meaning: 'two\nlines' })))).toThrow('PORT: the meaning must be one non-empty line');
    expect(() => configTable(CONFIG_DOCS, [...SCHEMA_KEYS, ...OUTSIDE_SCHEMA])).toThrow('is in envSchema now: take it out of OUTSIDE_SCHEMA');
    expect(configTable(changed((d) => void Object.assign(d.PORT!, { meaning: 'a | b' })))).toContain('| `PORT` | a \\| b |');
  });

  it('refuses a README without both markers', () => {
    expect(() => readmeConfigTable(README.replace(TABLE_START, ''))).toThrow(TABLE_START);
    expect(() => withConfigTable(README.replace(TABLE_END, ''), configTable())).toThrow(TABLE_END);
    expect(() => withConfigTable(`${README}\n${TABLE_END}\n`, configTable())).toThrow('once each');
  });
});

describe('npm run docs:config (scripts/config-table.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'config-table-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const run = (file: string) => execFileSync(process.execPath, ['--import', 'tsx', 'scripts/config-table.ts', file], { cwd: REPO, encoding: 'utf8' });

  // Two `node --import tsx` starts: seconds each on a busy machine.
  it('rewrites only the table of a README whose table drifted, and leaves a current one alone', () => {
    const file = join(dir, 'README.md');
    const table = readmeConfigTable(README);
    const drifted = README.replace(table, table.split('\n').slice(0, -3).join('\n') + '\n| `GONE` | old | none |');
    writeFileSync(file, drifted);
    expect(run(file)).toContain('is rewritten');
    const fixed = readFileSync(file, 'utf8');
    expect(fixed).toBe(withConfigTable(drifted, configTable()));
    expect(readmeConfigTable(fixed)).toBe(configTable());
    // Everything outside the markers is as it was.
    expect(fixed.slice(0, fixed.indexOf(TABLE_START))).toBe(README.slice(0, README.indexOf(TABLE_START)));
    expect(fixed.slice(fixed.indexOf(TABLE_END))).toBe(README.slice(README.indexOf(TABLE_END)));
    expect(run(file)).toContain('already up to date');
    expect(readFileSync(file, 'utf8')).toBe(fixed);
  }, 120_000);
});
