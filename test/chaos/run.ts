// npm run chaos: the whole pipeline under worker crashes (issue 10's measurement). Prints the
// figures as a table and one JSON line; exits 1 when anything was lost, answered twice, done
// twice or out of order, or the run did not settle within 120 s of the last strike.
// Options: --workers N --sessions N --messages N --kills N --freezes N --seed N, --json (only
// the JSON line on stdout), --quiet (no progress lines on stderr).
import { parseArgs } from 'node:util';
import { formatFigures, targetsMet } from './figures.js';
import { runChaos } from './harness.js';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '3' },
    sessions: { type: 'string', default: '20' },
    messages: { type: 'string', default: '60' },
    kills: { type: 'string', default: '18' },
    freezes: { type: 'string', default: '3' },
    seed: { type: 'string' },
    json: { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
  },
});

const whole = (name: keyof typeof values, min: number): number => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(`chaos: --${name} must be a whole number of at least ${min} (got "${String(values[name])}")\n`);
    process.exit(2);
  }
  return n;
};

const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : whole('seed', 0);
const log = (line: string) => {
  if (!values.quiet) process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 23)}] ${line}\n`);
};

const result = await runChaos({
  workers: whole('workers', 1),
  sessions: whole('sessions', 1),
  messages: whole('messages', 1),
  kills: whole('kills', 0),
  freezes: whole('freezes', 0),
  seed,
  quiesceMs: 120_000,
  log,
});

const f = result.figures;
const summary = { seed, wallMs: result.wallMs, settled: result.settled, ...f, killLog: result.kills, freezeLog: result.freezes };
if (!values.json) {
  process.stdout.write(
    `chaos: seed ${seed}, ${(result.wallMs / 1000).toFixed(1)} s${result.settled ? '' : ', NOT settled within 120 s after the last strike'}\n`,
  );
  process.stdout.write(`${formatFigures(f, result.kills)}\n`);
}
process.stdout.write(`${JSON.stringify(summary)}\n`);
process.exitCode = targetsMet(f) && result.settled ? 0 : 1;
