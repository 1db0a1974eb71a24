import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { waitFor } from '../helpers/processes.js';
import { SessionControl } from '../../src/session/control.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';

const key = (conversation: string) => sessionKeyOf({ platform: 'terminal', conversation });

describe('run control across processes', () => {
  let h: PipelineHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('/stop cancels the running run in another process: the user is told, the job fails as cancelled, the next message runs', async () => {
    h = await PipelineHarness.start('stop', { delayMs: (req) => (String(req.body.messages.at(-1).content).includes('long') ? 20_000 : 5) });
    await h.addWorkers(1);
    const control = new SessionControl(h.redis, h.keys);
    expect(await control.stop(key('c'))).toBe(false);
    const long = await h.send('c', 'c long job');
    await waitFor('the run to call the model', () => h!.intervals.length === 1);
    expect((await control.status(key('c'))).running).toBe(true);
    expect(await control.stop(key('c'))).toBe(true);
    const after = await h.send('c', 'c after');
    const counts = await h.waitEnded(['c'], [long.id, after.id], 15_000);
    expect(counts.get(long.id)).toBe(1);

    const outcomes = (await h.events('c')).flatMap((e) => (e.type === 'ended' ? [e.outcome.state] : e.type === 'post' ? [`${e.kind}: ${e.text}`] : []));
    expect(outcomes).toEqual(['notice: Stopped.', 'cancelled', 'answer: ack c after', 'completed']);
    const failed = await h.queue.getJobs(['failed']);
    expect(failed.map((j) => j.failedReason)).toEqual([expect.stringMatching(/^cancelled: cancelled/)]);
    const status = await control.status(key('c'));
    expect(status).toMatchObject({ running: false, queued: 0, last: { state: 'completed' } });
  }, 60_000);

  it('different sessions run in parallel up to the worker concurrency, never above it', async () => {
    h = await PipelineHarness.start('parallel', { delayMs: () => 600 });
    await h.addWorkers(1, { WORKER_CONCURRENCY: '3' });
    const sessions = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
    const ids = await Promise.all(sessions.map(async (s) => (await h!.send(s, `${s} go`)).id));
    await h.waitEnded(sessions, ids, 20_000);
    expect(h.maxInflight).toBe(3);
    expect(h.overlaps()).toEqual([]);
  }, 60_000);
});
