import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { waitFor } from '../helpers/processes.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';
import { RunStore } from '../../src/run/record.js';
import { longMessagePath } from '../../src/run/input/long-message.js';
import { utcDay } from '../../src/access/utc-day.js';
import type { ChatMessage } from '../../src/agent/types.js';
import type { RecordedRequest, Step } from '../fakes/openai-server.js';

/**
 * USER_DAILY_TOKENS and MESSAGE_MAX_CHARS through the real pipeline: terminal channel, worker
 * processes, real Redis, a fake model that reports its usage.
 */
const USAGE = { prompt_tokens: 1300, completion_tokens: 200 };
const READ = { name: 'read_file', arguments: '{"path":"notes.md"}' };

const lastUser = (req: RecordedRequest) => String([...(req.body.messages as ChatMessage[])].reverse().find((m) => m.role === 'user')?.content ?? '');

describe('limits (terminal channel, worker processes, real Redis)', () => {
  let h: PipelineHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const notices = async (session: string) =>
    (await h!.events(session)).filter((e) => e.type === 'post' && e.kind !== 'status').map((e) => (e.type === 'post' ? `${e.kind}: ${e.text}` : ''));

  it('USER_DAILY_TOKENS: 1,500 tokens a call against 3,000 a day — answered, then stopped before the call whose reserved estimate no longer fits, then refused outright', async () => {
    h = await PipelineHarness.start('budget', { env: { USER_DAILY_TOKENS: '3000', RECONCILE_INTERVAL_MS: '3600000' } });
    h.fake.setHandler((req): Step => {
      const user = lastUser(req);
      const toolResults = (req.body.messages as ChatMessage[]).filter((m) => m.role === 'tool').length;
      if (user === 'read the notes' && toolResults === 0) return { content: 'Reading.', toolCalls: [READ], usage: USAGE };
      return { content: `ack ${user}`, usage: USAGE };
    });
    await h.addWorkers(1);

    const first = await h.send('b', 'hello');
    await h.waitEnded(['b'], [first.id], 30_000);
    expect(h.fake.requests).toHaveLength(1);

    // 1,500 spent: the next call's estimate (about 1,100 tokens, reserved before it) fits (→ 3,000), and then nothing fits.
    const second = await h.send('b', 'read the notes');
    await h.waitEnded(['b'], [second.id], 30_000);
    expect(h.fake.requests).toHaveLength(2);

    const third = await h.send('b', 'one more');
    await h.waitEnded(['b'], [third.id], 30_000);
    expect(h.fake.requests).toHaveLength(2);

    const said = await notices('b');
    expect(said[0]).toBe('answer: ack hello');
    const line = /^notice: You have used today's token budget \(3,000 tokens\); it resets at 00:00 UTC, in (\d+ h|\d+ min|\d+ h \d+ min)\.$/;
    expect(said.slice(1)).toEqual([expect.stringMatching(line), expect.stringMatching(line)]);

    const counted = `${h.prefix}:tokens:terminal:tester:${utcDay(Date.now())}`;
    expect(await h.redis.get(counted)).toBe('3000');
    expect(await h.redis.ttl(counted)).toBeGreaterThan(47 * 3600);

    const failed = await waitFor('both failed jobs', async () => {
      const jobs = await h!.queue.getJobs(['failed']);
      return jobs.length === 2 && jobs;
    });
    expect(failed.map((j) => j.failedReason).sort()).toEqual([expect.stringMatching(/^failed: budget/), expect.stringMatching(/^failed: budget/)]);
    const runs = new RunStore(h.redis, h.prefix);
    for (const job of failed) {
      expect(await runs.get(job.data.runId!)).toMatchObject({ state: 'failed', reason: 'budget' });
      const { logs } = await h.queue.getJobLogs(job.id!);
      expect(logs.find((l) => l.startsWith('result '))).toContain('"reason":"budget"');
    }
    expect(await h.historyTexts('b')).toEqual(['hello', 'read the notes', 'one more']);
  }, 60_000);

  it('SESSION_QUEUE_MAX counts waiting messages only: with a cap of 2, one running and one waiting, a third is accepted and a fourth refused', async () => {
    // The first turn's model call takes long enough for the rest to arrive while it runs.
    h = await PipelineHarness.start('queue-max', {
      delayMs: (req) => (lastUser(req).startsWith('q one') ? 2_000 : 5),
      env: { RECONCILE_INTERVAL_MS: '3600000' },
    });
    await h.addWorkers(1);
    const cap = 2;
    const enqueue = async (text: string) => {
      const message = h!.message('q', text);
      return { message, status: (await h!.producer.enqueue(message, cap)).status };
    };

    const one = await enqueue('q one');
    expect(one.status).toBe('queued');
    await waitFor('the first turn running', () => h!.intervals.some((t) => t.messages.includes('q one')), 30_000);
    const two = await enqueue('q two');
    const three = await enqueue('q three');
    const four = await enqueue('q four');
    expect([two.status, three.status, four.status]).toEqual(['queued', 'queued', 'full']);

    await h.waitEnded(['q'], [one.message.id, two.message.id, three.message.id], 30_000);
    expect(await h.historyTexts('q')).toEqual(['q one', 'q two', 'q three']);
    // Once the turns are committed nothing counts as taken: the cap applies to an empty inbox again.
    expect(await h.redis.exists(h.keys.taken(sessionKeyOf({ platform: 'terminal', conversation: 'q' })))).toBe(0);
    expect((await enqueue('q five')).status).toBe('queued');
  }, 60_000);

  it('MESSAGE_MAX_CHARS: a longer message is saved whole in the workspace; the model reads its beginning and where the rest is', async () => {
    h = await PipelineHarness.start('long-message', { env: { MESSAGE_MAX_CHARS: '1000', RECONCILE_INTERVAL_MS: '3600000' } });
    h.fake.setHandler(() => ({ content: 'I see the start of it.' }));
    await h.addWorkers(1);

    const text = `${'lorem ipsum '.repeat(100)}THE-TAIL-ONLY-THE-FILE-HAS`;
    const m = await h.send('l', text);
    await h.waitEnded(['l'], [m.id], 30_000);

    const path = longMessagePath(m);
    const ws = join(h.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'terminal', conversation: 'l' })));
    expect(await readFile(join(ws, path), 'utf8')).toBe(text);

    expect(h.fake.requests).toHaveLength(1);
    const seen = lastUser(h.fake.requests[0]!);
    expect(seen.startsWith(text.slice(0, 1000))).toBe(true);
    expect(seen).not.toContain('THE-TAIL-ONLY-THE-FILE-HAS');
    expect(seen).toContain(`This message was ${text.length.toLocaleString('en-US')} characters long, too long to include in full`);
    expect(seen).toContain(`It is saved in full at ${path}`);
    expect(await notices('l')).toEqual(['answer: I see the start of it.']);
    // The inbox's copy was the whole text; history keeps what the model read.
    expect(await h.historyTexts('l')).toEqual([seen]);
  }, 60_000);
});
