// npm run docs:config: writes README.md's configuration table (between its config-table markers)
// from the variables' documentation in src/config/docs.ts. A path argument names another file
// (test/config/readme-table.test.ts runs it on a copy).
import { readFileSync, writeFileSync } from 'node:fs';
import { configTable, withConfigTable } from '../src/config/config-table.js';

const file = process.argv[2] ?? 'README.md';
try {
  const before = readFileSync(file, 'utf8');
  const after = withConfigTable(before, configTable());
  if (after !== before) writeFileSync(file, after);
  process.stdout.write(`${file}: the configuration table ${after === before ? 'was already up to date' : 'is rewritten'}\n`);
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
