import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAY_REPEAT_NOTE } from '../../src/channels/kit/pieces.js';
import { PipelineHarness } from '../helpers/pipeline.js';
import { waitFor } from '../helpers/processes.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';
import type { JournalEntry } from '../../src/session/journal.js';
import type { OutboxRecord } from '../../src/run/delivery/reply.js';
import type { InboundMessage } from '../../src/channels/types.js';
import type { RecordedRequest } from '../fakes/openai-server.js';
import { MAX_CLAIMS } from '../../src/session/turn.js';

/**
 * Resume at each journal point, with real Redis and a real worker process: the session's journal
 * is written as a run that died at that point would have left it, then a worker takes the turn.
 */
const FAST_LOCKS = { LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000', RECONCILE_INTERVAL_MS: '3600000' };
const APPEND_ARGS = JSON.stringify({ path: 'log.txt', old_text: 'END', new_text: 'line-1\nEND' });
const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };

const asked: JournalEntry = {
  t: 'model',
  step: 1,
  calls: 1,
  response: {
    message: {
      role: 'assistant',
      content: 'Appending.',
      tool_calls: [{ id: 'call_w', type: 'function', function: { name: 'edit_file', arguments: APPEND_ARGS } }],
    },
    stopReason: 'toolUse',
    usage,
  },
};
const started: JournalEntry = { t: 'tool_start', step: 1, callId: 'call_w', name: 'edit_file', args: APPEND_ARGS };
const finished: JournalEntry = {
  t: 'tool_end',
  step: 1,
  callId: 'call_w',
  name: 'edit_file',
  ok: true,
  content: 'Edited log.txt at line 1 (as recorded)',
  summary: 'edit_file log.txt → Edited',
  ms: 2,
};

describe('resume from the journal (worker process, real Redis)', () => {
  let h: PipelineHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function setup(name: string): Promise<{ h: PipelineHarness; session: string; log: () => Promise<string>; requests: RecordedRequest[] }> {
    const harness = await PipelineHarness.start(name, { env: FAST_LOCKS });
    h = harness;
    const session = sessionKeyOf({ platform: 'terminal', conversation: 'r' });
    const ws = join(harness.workspaceRoot, workspaceFolderName(session));
    await mkdir(ws, { recursive: true });
    await writeFile(join(ws, 'log.txt'), 'END');
    const requests: RecordedRequest[] = [];
    harness.fake.setHandler((req) => {
      requests.push(req);
      return { content: 'Finished.' };
    });
    return { h: harness, session, log: () => readFile(join(ws, 'log.txt'), 'utf8'), requests };
  }

  async function leaveJournal(harness: PipelineHarness, session: string, message: InboundMessage, entries: JournalEntry[]): Promise<void> {
    const turn: JournalEntry = { t: 'turn', runId: 'dead.1', ids: [message.id], at: Date.now() };
    await harness.redis.rpush(harness.keys.journal(session), ...[turn, ...entries].map((e) => JSON.stringify(e)));
  }

  async function answers(harness: PipelineHarness): Promise<string[]> {
    return (await harness.events('r')).filter((e) => e.type === 'post').map((e) => (e.type === 'post' ? e.text : ''));
  }

  it('after a model response: the model is asked only for the next step, the tool runs once', async () => {
    const { h, session, log, requests } = await setup('resume-model');
    const m = h.message('r', 'append a line');
    await leaveJournal(h, session, m, [asked]);
    await h.producer.enqueue(m);
    await h.addWorkers(1);
    await h.waitEnded(['r'], [m.id], 30_000);

    expect(requests).toHaveLength(1);
    const tools = (requests[0]!.body.messages as { role: string; content: string }[]).filter((x) => x.role === 'tool');
    expect(tools.map((t) => t.content)).toEqual([expect.stringMatching(/^Edited log.txt/)]);
    expect(await log()).toBe('line-1\nEND');
    expect(await answers(h)).toEqual(['Finished.']);
  }, 60_000);

  it('after a side-effecting tool started without a result: not run again, the model is told it was interrupted', async () => {
    const { h, session, log, requests } = await setup('resume-started');
    const m = h.message('r', 'append a line');
    await leaveJournal(h, session, m, [asked, started]);
    await h.producer.enqueue(m);
    await h.addWorkers(1);
    await h.waitEnded(['r'], [m.id], 30_000);

    const tools = (requests[0]!.body.messages as { role: string; content: string }[]).filter((x) => x.role === 'tool');
    expect(tools.map((t) => t.content)).toEqual([expect.stringMatching(/^Error: interrupted: .*may or may not have taken effect/)]);
    expect(await log()).toBe('END');
  }, 60_000);

  it('after a tool result: the tool is not run again, the model reads the recorded result; the journal is gone after the commit', async () => {
    const { h, session, log, requests } = await setup('resume-result');
    const m = h.message('r', 'append a line');
    await leaveJournal(h, session, m, [asked, started, finished]);
    await h.producer.enqueue(m);
    await h.addWorkers(1);
    await h.waitEnded(['r'], [m.id], 30_000);

    const tools = (requests[0]!.body.messages as { role: string; content: string }[]).filter((x) => x.role === 'tool');
    expect(tools.map((t) => t.content)).toEqual(['Edited log.txt at line 1 (as recorded)']);
    expect(await log()).toBe('END');
    expect(await h.historyTexts('r')).toEqual(['append a line']);
    expect(await h.redis.llen(h.keys.journal(session))).toBe(0);
  }, 60_000);

  it('a turn whose runs keep dying at the same step ends failed (worker_crashed), saying what was already done, never "send it again"', async () => {
    const { h, session, log, requests } = await setup('resume-crashed');
    const m = h.message('r', 'append a line');
    await leaveJournal(h, session, m, [asked, started, finished]);
    // MAX_CLAIMS runs already started with the journal at this length (4 entries) and died.
    await h.redis.hset(h.keys.claims(session), m.id, String(MAX_CLAIMS), `${m.id}@`, '4');
    await h.producer.enqueue(m);
    await h.addWorkers(1);
    await h.waitEnded(['r'], [m.id], 30_000);

    expect(requests).toHaveLength(0);
    expect(await log()).toBe('END');
    const [notice] = await answers(h);
    expect(notice).toContain('Already done: edit_file log.txt → Edited');
    expect(notice).not.toMatch(/send it again/);
    // The user is told before the job is marked failed: wait for BullMQ to catch up.
    const failed = await waitFor('the failed job', async () => {
      const jobs = await h.queue.getJobs(['failed']);
      return jobs.length > 0 && jobs;
    });
    expect(failed.map((j) => j.failedReason)).toEqual([expect.stringMatching(/^failed: worker_crashed/)]);
  }, 60_000);

  it('a run that made progress resets the crash counter: dying at a later step is not dying at the same step', async () => {
    const { h, session, requests } = await setup('resume-progress');
    const m = h.message('r', 'append a line');
    await leaveJournal(h, session, m, [asked, started, finished]);
    // The counter was last set when the journal was shorter: the turn has moved on since.
    await h.redis.hset(h.keys.claims(session), m.id, String(MAX_CLAIMS), `${m.id}@`, '2');
    await h.producer.enqueue(m);
    await h.addWorkers(1);
    await h.waitEnded(['r'], [m.id], 30_000);
    expect(requests).toHaveLength(1);
    expect(await answers(h)).toEqual(['Finished.']);
  }, 60_000);

  it('after the commit with the reply started but not confirmed: the next run sends it again with the may-repeat note (never silence), then answers', async () => {
    const { h, session, requests } = await setup('resume-delivered');
    const earlier = h.message('r', 'earlier question');
    const record: OutboxRecord = { v: 1, runId: 'dead.1', session, to: earlier, state: 'completed', text: 'The earlier answer.', messageIds: [earlier.id] };
    await h.redis.set(h.keys.outbox(session), JSON.stringify(record));
    // The earlier run had started posting the only piece when it died: its outcome is unknown.
    await h.redis.rpush(h.keys.journal(session), JSON.stringify({ t: 'piece_start', i: 0 }));
    const next = await h.send('r', 'next question');
    await h.addWorkers(1);
    await h.waitEnded(['r'], [next.id], 30_000);

    // The terminal cannot be asked whether the earlier piece landed: it comes again, saying it may repeat.
    expect(await answers(h)).toEqual([`${MAY_REPEAT_NOTE}The earlier answer.`, 'Finished.']);
    expect(requests).toHaveLength(1);
    // The earlier reply is settled (not retried forever) and its run told the adapter it ended.
    expect(await h.redis.exists(h.keys.outbox(session))).toBe(0);
    expect((await h.endedCounts(['r'])).get(earlier.id)).toBe(1);
  }, 60_000);
});
