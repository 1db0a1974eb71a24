/**
 * `npm run doctor [-- --probe]`: checks the configuration (the environment and .env, as the
 * gateway and workers read them) before anyone sends a message, prints one line per check and
 * exits 1 when any check failed.
 */
import { formatTable, summary } from '../doctor/format.js';
import { exitCodeOf, runDoctor } from '../doctor/run.js';

const args = process.argv.slice(2);
const unknown = args.filter((a) => a !== '--probe' && a !== '--help' && a !== '-h');
if (args.includes('--help') || args.includes('-h') || unknown.length > 0) {
  if (unknown.length > 0) process.stderr.write(`doctor: unknown argument ${unknown.join(' ')}\n`);
  process.stderr.write('usage: npm run doctor [-- --probe]\n  --probe  also send one tiny chat completion that must call a tool\n');
  process.exit(unknown.length > 0 ? 2 : 0);
}

const results = await runDoctor(process.env, { probe: args.includes('--probe') });
const colour = process.stdout.isTTY === true && !process.env.NO_COLOR;
process.stdout.write(`${formatTable(results, { colour })}\n\n${summary(results)}\n`);
process.exitCode = exitCodeOf(results);
