import { describe, expect, it } from 'vitest';
import { formatFigures } from '../chaos/figures.js';
import { runChaos } from '../chaos/harness.js';

// The short form of `npm run chaos` (issue 10): a gateway, 3 worker processes, DMs whose turns
// each append a line to a journal, and busy workers killed during model calls, right after a tool
// call and during delivery, plus one frozen past its lock. CHAOS_SEED=N replays a plan.
const SEED = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const MESSAGES = 20;

describe('chaos: workers crash and freeze under load', () => {
  it('loses nothing, replies to each message once, never repeats a side effect, keeps each session in order', async () => {
    const progress: string[] = [];
    // One run per worker: every kill lands on the run and phase it targets (collateral kills are npm run chaos's job).
    const result = await runChaos({
      workers: 3,
      sessions: 8,
      messages: MESSAGES,
      kills: 6,
      freezes: 1,
      seed: SEED,
      quiesceMs: 60_000,
      concurrency: 1,
      log: (line) => progress.push(line),
    });
    const f = result.figures;
    const report = `seed ${SEED}, ${result.wallMs} ms\n${formatFigures(f, result.kills)}\n${progress.join('\n')}`;

    expect(f.kills.total, report).toBeGreaterThanOrEqual(6);
    expect(f.freezes, report).toBeGreaterThanOrEqual(1);
    // Each kill ends a run that another run then resumes (messages arriving together share a turn, so runs may be fewer than messages).
    expect(f.runs, report).toBeGreaterThan(f.kills.total);
    // Every message gets a reply: its answer, or (when kills struck its turn at the same step again
    // and again, which the crash counter cannot tell from a poison message) the honest line — never
    // one that asks to send it again after its line was written. A reply is never doubled: a piece
    // goes out as a placeholder edited into it, so a kill between posting and hearing back costs an
    // orphan "…" at worst (orphanPlaceholders in the report), never a second answer.
    const honest = f.notices.reduce((n, x) => n + x.tokens.length, 0);
    expect(
      {
        lost: f.lost,
        duplicates: f.duplicates,
        repeatedSideEffects: f.repeatedSideEffects,
        orderViolations: f.orderViolations,
        replied: f.answeredOnce + honest,
        sendAgainAfterWrite: f.sendAgainAfterWrite,
        answeredWithoutLine: f.answeredWithoutLine,
      },
      report,
    ).toEqual({ lost: 0, duplicates: 0, repeatedSideEffects: 0, orderViolations: 0, replied: MESSAGES, sendAgainAfterWrite: 0, answeredWithoutLine: 0 });
  }, 180_000);
});
