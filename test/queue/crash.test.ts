import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { waitFor } from '../helpers/processes.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { MAX_CLAIMS } from '../../src/session/turn.js';

// Short locks so a dead worker's runs come back in about 2-3 s (lock 2 s + stalled checks every 1 s).
const FAST_LOCKS = { LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000', WORKER_CONCURRENCY: '8', RECONCILE_INTERVAL_MS: '3600000' };
const SESSIONS = Array.from({ length: 8 }, (_, i) => `k${i}`);

describe('worker crashes', () => {
  let h: PipelineHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('a worker killed mid-run (SIGKILL) loses nothing: another worker re-runs, each message is committed and answered once, in order', async () => {
    h = await PipelineHarness.start('sigkill', { delayMs: () => 1_500, env: FAST_LOCKS });
    const [doomed] = await h.addWorkers(1);
    const firsts = await Promise.all(SESSIONS.map(async (s) => (await h!.send(s, `${s} m1`)).id));
    await waitFor('all first runs in flight', () => SESSIONS.every((s) => h!.intervals.some((i) => i.session === s)));
    doomed!.kill('SIGKILL');
    await doomed!.exited;
    const seconds = await Promise.all(SESSIONS.map(async (s) => (await h!.send(s, `${s} m2`)).id));
    await h.addWorkers(1);

    const counts = await h.waitEnded(SESSIONS, [...firsts, ...seconds], 30_000);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    for (const s of SESSIONS) expect(await h.historyTexts(s)).toEqual([`${s} m1`, `${s} m2`]);
    // The killed worker's first attempts were repeated, never run beside the new ones.
    expect(h.intervals.filter((i) => i.messages[0]?.endsWith(' m1')).length).toBeGreaterThanOrEqual(2 * SESSIONS.length);
    expect(h.overlaps()).toEqual([]);
  }, 60_000);

  it('a frozen worker (SIGSTOP past its lock) that wakes after its runs moved elsewhere changes nothing and posts nothing', async () => {
    h = await PipelineHarness.start('freeze', { delayMs: () => 800, env: FAST_LOCKS });
    const [frozen] = await h.addWorkers(1);
    const ids = await Promise.all(SESSIONS.map(async (s) => (await h!.send(s, `${s} m1`)).id));
    await waitFor('all runs in flight', () => SESSIONS.every((s) => h!.intervals.some((i) => i.session === s)));
    frozen!.kill('SIGSTOP');
    try {
      await h.addWorkers(1);
      await h.waitEnded(SESSIONS, ids, 30_000);
    } finally {
      frozen!.kill('SIGCONT');
    }
    // Give the woken worker time to try its stale commits and deliveries.
    await new Promise((r) => setTimeout(r, 2_500));
    const counts = await h.endedCounts(SESSIONS);
    expect(ids.map((id) => counts.get(id))).toEqual(ids.map(() => 1));
    for (const s of SESSIONS) {
      expect(await h.historyTexts(s)).toEqual([`${s} m1`]);
      const answers = (await h.events(s)).filter((e) => e.type === 'post' && e.kind === 'answer');
      expect(answers).toHaveLength(1);
    }
  }, 60_000);

  it('a message that kills every worker that takes it is answered with an honest line instead of being retried forever', async () => {
    h = await PipelineHarness.start('poison', { env: FAST_LOCKS });
    const poison = h.message('p', 'p poison');
    const session = sessionKeyOf({ platform: 'terminal', conversation: 'p' });
    // As if MAX_CLAIMS earlier runs had taken it and died before journaling anything (the journal still empty).
    await h.redis.hset(h.keys.claims(session), poison.id, String(MAX_CLAIMS), `${poison.id}@`, '0');
    await h.producer.enqueue(poison);
    const next = await h.send('p', 'p next');
    await h.addWorkers(1);
    await h.waitEnded(['p'], [poison.id, next.id]);
    const events = await h.events('p');
    const posts = events.filter((e) => e.type === 'post').map((e) => (e.type === 'post' ? `${e.kind}: ${e.text}` : ''));
    expect(posts[0]).toMatch(/^notice: I could not process this message: every attempt crashed before doing anything/);
    expect(posts[1]).toBe('answer: ack p next');
    const failed = await h.queue.getJobs(['failed']);
    expect(failed.map((j) => j.failedReason)).toEqual([expect.stringMatching(/^failed: worker_crashed/)]);
    expect(h.fake.requests).toHaveLength(1);
  }, 60_000);
});
