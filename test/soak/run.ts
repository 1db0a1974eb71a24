// npm run soak: a gateway and workers through the fake Bot API for many turns, the RSS of each
// process sampled (issue 29). Prints the curve and one JSON line; exits 1 when a process grew more
// than --bound percent past its settled RSS at --baseline turns (the least of a few readings over a few
// seconds at each point, the load paused: what it holds, not a moment's garbage; single readings are printed too), or a turn was answered twice or not at all.
// Options: --turns N --sessions N --workers N --concurrency N (WORKER_CONCURRENCY) --in-flight N --sample-every N --baseline N --bound P,
// --json (only the JSON line on stdout).
import { parseArgs } from 'node:util';
import { runSoak } from './harness.js';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '100000' },
    sessions: { type: 'string', default: '5000' },
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '32' },
    'in-flight': { type: 'string', default: '200' },
    'sample-every': { type: 'string', default: '2500' },
    baseline: { type: 'string', default: '10000' },
    bound: { type: 'string', default: '10' },
    json: { type: 'boolean', default: false },
  },
});

const whole = (name: keyof typeof values, min: number): number => {
  const n = Number(values[name]);
  if (!Number.isFinite(n) || n < min) {
    process.stderr.write(`soak: --${name} must be a number of at least ${min} (got "${String(values[name])}")\n`);
    process.exit(2);
  }
  return n;
};

const bound = whole('bound', 0);
// Ctrl-C stops the run through its own cleanup (every process it started, its Redis keys).
const interrupted = new AbortController();
process.once('SIGINT', () => interrupted.abort(new Error('interrupted')));
const result = await runSoak({
  signal: interrupted.signal,
  turns: whole('turns', 1),
  sessions: whole('sessions', 1),
  workers: whole('workers', 1),
  concurrency: whole('concurrency', 1),
  inFlight: whole('in-flight', 1),
  sampleEvery: whole('sample-every', 1),
  baselineAt: whole('baseline', 0),
  log: (line) => process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`),
});

const over = Object.entries(result.growth).filter(([, g]) => g.percent > bound);
if (!values.json) {
  const names = Object.keys(result.samples[0]?.rssMiB ?? {});
  const rows = [['turns', 'seconds', ...names.flatMap((n) => [`${n} MiB`, '(single)'])]];
  for (const s of result.samples)
    rows.push([String(s.turns), (s.atMs / 1000).toFixed(0), ...names.flatMap((n) => [s.rssMiB[n]!.toFixed(1), `(${s.rawMiB[n]!.toFixed(1)})`])]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) process.stdout.write(`  ${r.map((c, i) => c.padStart(widths[i]!)).join('  ')}\n`);
  const pct = (p: number) => `${p >= 0 ? '+' : ''}${p.toFixed(1)} %`;
  for (const [name, g] of Object.entries(result.growth)) {
    const raw = result.rawGrowth[name];
    process.stdout.write(
      `  ${name}: settled ${g.baselineMiB.toFixed(1)} MiB at the baseline, peak after it ${g.peakAfterMiB.toFixed(1)} MiB (${pct(g.percent)}); single readings ${raw ? `${raw.baselineMiB.toFixed(1)} → ${raw.peakAfterMiB.toFixed(1)} MiB (${pct(raw.percent)})` : 'n/a'}\n`,
    );
  }
  process.stdout.write(
    `soak: ${result.answered} of ${result.turns} turns answered in ${(result.wallMs / 1000).toFixed(0)} s; duplicates ${result.duplicates}, unanswered ${result.unanswered}; ${over.length === 0 ? `every process within +${bound} %` : `over +${bound} %: ${over.map(([n]) => n).join(', ')}`}\n`,
  );
}
process.stdout.write(`${JSON.stringify({ bound, ...result })}\n`);
process.exitCode = over.length === 0 && result.duplicates === 0 && result.unanswered === 0 ? 0 : 1;
