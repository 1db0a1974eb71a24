import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';

/** An entry no Lua script can read must not wedge its conversation (issue 13's finding). */
describe('unreadable inbox entries (worker process, real Redis)', () => {
  let h: PipelineHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('an entry the claim cannot decode is moved aside, counted and logged; the messages after it are answered', async () => {
    h = await PipelineHarness.start('unreadable', { env: { RECONCILE_INTERVAL_MS: '3600000' } });
    const session = sessionKeyOf({ platform: 'terminal', conversation: 'u' });
    // As an older gateway (or any writer) would have queued it: a lone surrogate, escaped as JSON.stringify writes it.
    const bad = JSON.stringify(h.message('u', 'bad \ud800 text'));
    expect(bad).toContain('\\ud800');
    await h.redis.rpush(h.keys.inbox(session), bad);
    const next = await h.send('u', 'u next');
    await h.addWorkers(1);
    await h.waitEnded(['u'], [next.id], 20_000);

    expect(await h.redis.lrange(h.keys.unreadable, 0, -1)).toEqual([bad]);
    expect(await h.redis.llen(h.keys.inbox(session))).toBe(0);
    expect(await h.historyTexts('u')).toEqual(['u next']);
    expect(h.workers[0]!.stderr()).toContain('inbox entries no run can read were moved aside');
  }, 40_000);

  it('the producer queues such text well-formed (U+FFFD), so it is answered like any other', async () => {
    h = await PipelineHarness.start('well-formed');
    await h.addWorkers(1);
    const m = await h.send('w', 'w half \ud800 a pair');
    await h.waitEnded(['w'], [m.id], 20_000);
    expect(await h.historyTexts('w')).toEqual(['w half \ufffd a pair']);
  }, 40_000);
});
