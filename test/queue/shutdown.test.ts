import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { waitFor } from '../helpers/processes.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';
import type { JournalEntry } from '../../src/session/journal.js';
import type { RecordedRequest } from '../fakes/openai-server.js';

const FAST_LOCKS = { LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000', RECONCILE_INTERVAL_MS: '3600000' };
const APPEND = { name: 'edit_file', arguments: JSON.stringify({ path: 'log.txt', old_text: 'END', new_text: 'line-1\nEND' }) };

describe('worker shutdown and run limits (worker processes, real Redis)', () => {
  let h: PipelineHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function workspace(harness: PipelineHarness): Promise<() => Promise<string>> {
    const ws = join(harness.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'terminal', conversation: 'd' })));
    await mkdir(ws, { recursive: true });
    await writeFile(join(ws, 'log.txt'), 'END');
    return () => readFile(join(ws, 'log.txt'), 'utf8');
  }

  it('SIGTERM: the active run stops at its next step boundary, the worker exits, another worker resumes the turn without asking the model again', async () => {
    h = await PipelineHarness.start('drain', { env: FAST_LOCKS });
    const log = await workspace(h);
    const requests: RecordedRequest[] = [];
    h.fake.setHandler((req) => {
      requests.push(req);
      const toolResults = (req.body.messages as { role: string }[]).filter((m) => m.role === 'tool').length;
      return toolResults === 0 ? { content: 'Appending.', toolCalls: [APPEND], delayMs: 1_500 } : { content: 'Appended.' };
    });
    const [first] = await h.addWorkers(1, { SHUTDOWN_GRACE_MS: '20000' });
    const m = await h.send('d', 'append a line');
    await waitFor('the model call in flight', () => requests.length === 1);
    first!.kill('SIGTERM');
    expect(await first!.exited).toBe(0);
    // The model's answer arrived during the drain and was journaled; the tool did not run.
    expect(await log()).toBe('END');
    const session = sessionKeyOf({ platform: 'terminal', conversation: 'd' });
    const journal = (await h.redis.lrange(h.keys.journal(session), 0, -1)).map((e) => JSON.parse(e) as JournalEntry);
    expect(journal.map((e) => e.t)).toEqual(['turn', 'model']);
    expect(await h.queue.getJobCounts('wait', 'active', 'failed')).toEqual({ wait: 1, active: 0, failed: 0 });

    await h.addWorkers(1);
    await h.waitEnded(['d'], [m.id], 30_000);
    expect(requests).toHaveLength(2);
    expect(await log()).toBe('line-1\nEND');
    const posts = (await h.events('d')).filter((e) => e.type === 'post').map((e) => (e.type === 'post' ? e.text : ''));
    expect(posts).toEqual(['Appended.']);
  }, 60_000);

  it('a long run whose model calls each outlast the lock keeps its lock and session: no other worker takes it over', async () => {
    h = await PipelineHarness.start('long-run', { env: FAST_LOCKS });
    const log = await workspace(h);
    h.fake.setHandler((req) => {
      const toolResults = (req.body.messages as { role: string }[]).filter((m) => m.role === 'tool').length;
      // Three model calls of 3 s each against a 2 s lock: the run lasts over four lock periods.
      return toolResults === 0
        ? { content: 'Appending.', toolCalls: [APPEND], delayMs: 3_000 }
        : toolResults === 1
          ? { content: 'Checking.', toolCalls: [{ name: 'read_file', arguments: '{"path":"log.txt"}' }], delayMs: 3_000 }
          : { content: 'Appended.', delayMs: 3_000 };
    });
    await h.addWorkers(2);
    const m = await h.send('d', 'append a line');
    await h.waitEnded(['d'], [m.id], 40_000);
    expect(h.fake.requests).toHaveLength(3);
    expect(await log()).toBe('line-1\nEND');
    await waitFor('the job completed', async () => (await h!.queue.getJobCounts('completed')).completed === 1);
    expect(await h.queue.getJobCounts('failed')).toEqual({ failed: 0 });
  }, 60_000);

  it('AGENT_RUN_TIMEOUT_MS ends a run failed (run_timeout) with an honest line; a resumed turn keeps its first start as the deadline', async () => {
    h = await PipelineHarness.start('timeout', { env: { ...FAST_LOCKS, AGENT_RUN_TIMEOUT_MS: '1500' } });
    h.fake.setHandler(() => ({ content: 'too late', delayMs: 5_000 }));
    await h.addWorkers(1);
    const slow = await h.send('d', 'a slow question');
    await h.waitEnded(['d'], [slow.id], 30_000);

    // A turn an earlier run began long ago is out of time as soon as it is resumed: the model is not asked.
    const session = sessionKeyOf({ platform: 'terminal', conversation: 'd' });
    const asked = h.fake.requests.length;
    const old = h.message('d', 'an old question');
    const turn: JournalEntry = { t: 'turn', runId: 'dead.1', ids: [old.id], at: Date.now() - 60_000 };
    await h.redis.rpush(h.keys.journal(session), JSON.stringify(turn));
    await h.producer.enqueue(old);
    await h.waitEnded(['d'], [old.id], 30_000);

    const notices = (await h.events('d')).filter((e) => e.type === 'post').map((e) => (e.type === 'post' ? `${e.kind}: ${e.text}` : ''));
    expect(notices).toEqual([
      expect.stringMatching(/^notice: I stopped: this took longer than the 2-second limit/),
      expect.stringMatching(/^notice: I stopped: this took longer/),
    ]);
    const failed = await waitFor('both failed jobs', async () => {
      const jobs = await h!.queue.getJobs(['failed']);
      return jobs.length === 2 && jobs;
    });
    expect(failed.map((j) => j.failedReason)).toEqual([expect.stringMatching(/^failed: run_timeout/), expect.stringMatching(/^failed: run_timeout/)]);
    expect(h.fake.requests.length).toBe(asked);
  }, 60_000);
});
