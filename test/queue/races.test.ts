import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { waitFor } from '../helpers/processes.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { reconcile } from '../../src/queue/reconciler.js';
import { createLogger } from '../../src/log.js';

const quiet = createLogger('silent');
const key = (conversation: string) => sessionKeyOf({ platform: 'terminal', conversation });

describe('queue races', () => {
  let h: PipelineHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('a message arriving at the instant a run finishes is neither lost nor run beside it', async () => {
    const DELAY = 40;
    // No reconciler here: the run's own hand-over must cover the race.
    h = await PipelineHarness.start('endrace', { delayMs: () => DELAY, env: { WORKER_CONCURRENCY: '8', RECONCILE_INTERVAL_MS: '3600000' } });
    await h.addWorkers(1);
    const second = new Map<string, Promise<string>>();
    // The second message is sent as the model answers the first: a few ms before, during or after the commit.
    h.onTurn = (turn) => {
      if (!turn.messages[0]?.endsWith(' first')) return;
      const s = turn.session;
      second.set(
        s,
        new Promise((resolve) => setTimeout(() => void h!.send(s, `${s} second`).then((m) => resolve(m.id)), DELAY + Math.floor(Math.random() * 8) - 2)),
      );
    };
    const sessions = Array.from({ length: 60 }, (_, i) => `r${i}`);
    const firsts = await Promise.all(sessions.map(async (s) => (await h!.send(s, `${s} first`)).id));
    await waitFor('every second message sent', () => second.size === sessions.length, 30_000);
    const seconds = await Promise.all(sessions.map((s) => second.get(s)!));
    const counts = await h.waitEnded(sessions, [...firsts, ...seconds], 20_000);

    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    for (const s of sessions) expect(await h.historyTexts(s)).toEqual([`${s} first`, `${s} second`]);
    expect(h.overlaps()).toEqual([]);
  }, 90_000);

  it('a retry pressed in the dashboard never makes two runs of one session overlap', async () => {
    h = await PipelineHarness.start('retry', { delayMs: (req) => (String(req.body.messages.at(-1).content).includes('slow') ? 1_500 : 5) });
    await h.addWorkers(1, { WORKER_CONCURRENCY: '4' });
    const first = await h.send('d', 'd quick');
    await h.waitEnded(['d'], [first.id]);
    const [done] = await h.queue.getJobs(['completed']);
    expect(done).toBeDefined();

    const slow = await h.send('d', 'd slow');
    await waitFor('the slow run to start', () => h!.intervals.some((i) => i.messages.includes('d slow')));
    await done!.retry('completed');
    const retried = await waitFor('the retried job to finish', async () => {
      const job = await h!.queue.getJob(done!.id!);
      return job?.finishedOn && job.returnvalue && job.attemptsStarted > 1 ? job : undefined;
    });
    expect(retried.returnvalue.state).toBe('skipped');
    expect(retried.returnvalue.reason).toBe('session_busy');
    await h.waitEnded(['d'], [slow.id]);
    expect(h.overlaps()).toEqual([]);
    expect(await h.historyTexts('d')).toEqual(['d quick', 'd slow']);
  }, 60_000);

  it('a session whose job vanished (gateway died before the add, or an operator removed it) is picked up by the reconciler', async () => {
    h = await PipelineHarness.start('reconcile');
    // The gateway's append happened, its job add did not.
    const message = h.message('x', 'x stranded');
    await h.redis.rpush(h.keys.inbox(key('x')), JSON.stringify(message));
    await h.redis.sadd(h.keys.pending, key('x'));
    // An operator removed the waiting job of another session.
    const removed = await h.send('y', 'y removed');
    const [job] = await h.queue.getJobs(['waiting']);
    await job!.remove();
    expect(await h.queue.getJobCounts('waiting', 'active')).toEqual({ waiting: 0, active: 0 });

    expect(await reconcile(h.redis, h.queue, h.keys, quiet)).toBe(2);
    expect(await reconcile(h.redis, h.queue, h.keys, quiet)).toBe(0);
    await h.addWorkers(1);
    const counts = await h.waitEnded(['x', 'y'], [message.id, removed.id]);
    expect(counts.get(message.id)).toBe(1);
    expect(counts.get(removed.id)).toBe(1);
  }, 60_000);

  it('a redelivered platform event starts at most one run', async () => {
    h = await PipelineHarness.start('dedupe');
    const message = h.message('e', 'e once');
    expect((await h.producer.enqueue(message)).status).toBe('queued');
    expect((await h.producer.enqueue({ ...message, id: 'another-id' })).status).toBe('duplicate');
    await h.addWorkers(1);
    await h.waitEnded(['e'], [message.id]);
    expect(await h.historyTexts('e')).toEqual(['e once']);
    expect(h.fake.requests).toHaveLength(1);
  }, 60_000);
});
