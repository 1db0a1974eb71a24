import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';

const SESSIONS = 50;
const PER_SESSION = 10;

describe('queue under load: 50 sessions x 10 messages, two worker processes at concurrency 8', () => {
  let h: PipelineHarness;
  beforeAll(async () => {
    h = await PipelineHarness.start('order', { delayMs: () => 5 + Math.floor(Math.random() * 40), env: { WORKER_CONCURRENCY: '8' } });
    await h.addWorkers(2);
  });
  afterAll(async () => h?.close());

  it('keeps each session serial and in arrival order, loses nothing and answers each message once', async () => {
    const sessions = Array.from({ length: SESSIONS }, (_, i) => `s${i}`);
    const ids: string[] = [];
    // Messages of all sessions interleaved, some in bursts (they fold), some spaced (they race run ends).
    for (let m = 0; m < PER_SESSION; m++) {
      await Promise.all(sessions.map(async (s) => ids.push((await h.send(s, `${s} m${m}`)).id)));
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 30)));
    }
    const counts = await h.waitEnded(sessions, ids, 90_000);

    expect(ids).toHaveLength(SESSIONS * PER_SESSION);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    for (const s of sessions) {
      expect(await h.historyTexts(s)).toEqual(Array.from({ length: PER_SESSION }, (_, m) => `${s} m${m}`));
    }
    expect(h.overlaps()).toEqual([]);
    // Different sessions did run side by side, never above 2 workers x 8.
    expect(h.maxInflight).toBeGreaterThan(1);
    expect(h.maxInflight).toBeLessThanOrEqual(16);
    // Each answer quotes exactly the messages of its turn, in order.
    for (const s of sessions.slice(0, 5)) {
      const answers = (await h.events(s)).filter((e) => e.type === 'post' && e.kind === 'answer').map((e) => (e.type === 'post' ? e.text : ''));
      const quoted = answers.flatMap((a) => a.replace(/^ack /, '').split(' | '));
      expect(quoted).toEqual(Array.from({ length: PER_SESSION }, (_, m) => `${s} m${m}`));
    }
  }, 120_000);
});
