import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { waitFor, type Spawned } from '../helpers/processes.js';
import { createFiringQueue, ScheduleBook, type FiringQueue } from '../../src/schedules/schedule-book.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';
import type { ChatMessage } from '../../src/agent/types.js';
import type { RecordedRequest, Step } from '../fakes/openai-server.js';

// Short locks so a dead worker's firing and run come back in about 2-3 s.
const ENV = { LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000', RECONCILE_INTERVAL_MS: '3600000', TOOLS_APPROVE: 'write_file' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** `sched-<id>-<firing ms>` → the firing time. */
const firedAt = (messageId: string) => Number(messageId.slice(messageId.lastIndexOf('-') + 1));
/** The prompt of a scheduled turn's request (undefined for a person's turn). */
function scheduledPrompt(req: RecordedRequest): string | undefined {
  const user = (req.body.messages as ChatMessage[]).find((m) => m.role === 'user' && String(m.content).startsWith('[Scheduled task'));
  return user === undefined ? undefined : String(user.content).slice(String(user.content).indexOf('\n\n') + 2);
}

/**
 * The scripted model, by the scheduled prompt's first word (each test its own conversation):
 * `fl` always fails (400), `rt` tries to schedule and to write a file that needs approval, the
 * rest are acknowledged.
 */
function model(req: RecordedRequest): Step {
  const prompt = scheduledPrompt(req);
  const messages = req.body.messages as ChatMessage[];
  if (prompt?.startsWith('fl ')) return { status: 400, body: { error: { message: 'this model refuses scheduled work', type: 'invalid_request_error' } } };
  if (prompt?.startsWith('rt ')) {
    if (messages.some((m) => m.role === 'tool')) return { content: 'did what I could' };
    return {
      toolCalls: [
        { name: 'schedule_task', arguments: JSON.stringify({ when: '0 9 * * *', timezone: 'UTC', prompt: 'again tomorrow' }) },
        { name: 'write_file', arguments: JSON.stringify({ path: 'report.txt', content: 'hi' }) },
      ],
    };
  }
  return { content: `ack ${prompt ?? 'a person'}` };
}

describe('schedules with worker processes (BullMQ job schedulers)', () => {
  let h: PipelineHarness;
  let firings: FiringQueue;
  let book: ScheduleBook;
  let workers: Spawned[];
  beforeAll(async () => {
    h = await PipelineHarness.start('sched', { env: ENV });
    h.fake.setHandler(model);
    firings = createFiringQueue(h.prefix, h.redis);
    book = new ScheduleBook(h.redis, h.prefix, firings, { perUser: 10, minIntervalMs: 1_000 });
    // One after the other: two cold starts at once on a loaded 2-core machine take far longer.
    workers = [...(await h.addWorkers(1)), ...(await h.addWorkers(1))];
  }, 150_000);
  afterAll(async () => {
    await firings?.close();
    await h?.close();
  });

  const scheduledEnded = async (session: string): Promise<Map<string, number>> =>
    new Map([...(await h.endedCounts([session]))].filter(([id]) => id.startsWith('sched-')));
  const requestsFor = (prefix: string) => h.fake.requests.filter((r) => scheduledPrompt(r)?.startsWith(prefix));

  it('two workers: every firing is one turn, answered once, in its conversation', async () => {
    const made = await book.create(h.message('tw', 'make it'), { when: '*/2 * * * * *', timezone: 'UTC', prompt: 'tw tick' });
    if (!made.ok) throw new Error(made.error);
    await waitFor('5 firings answered', async () => (await scheduledEnded('tw')).size >= 5, 40_000, 200);
    await book.remove(made.schedule);
    await sleep(2_500);

    const counts = await scheduledEnded('tw');
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    const times = [...counts.keys()].map(firedAt).sort((a, b) => a - b);
    // Consecutive firings of the cron, none skipped or doubled: 2 s apart, on even seconds.
    expect(times.every((t) => t % 2_000 === 0)).toBe(true);
    expect(times.slice(1).map((t, i) => t - times[i]!)).toEqual(times.slice(1).map(() => 2_000));
    // The model saw each firing's prompt once.
    expect(requestsFor('tw ')).toHaveLength(counts.size);
    // The run jobs say they are scheduled; the firing jobs are one per firing.
    const runs = await h.queue.getJobs(['completed']);
    expect(runs.filter((j) => j.name.startsWith(`scheduled ${made.schedule.id} · terminal tw`)).length).toBeGreaterThanOrEqual(1);
    expect(runs.filter((j) => j.data.trigger?.scheduled?.id === made.schedule.id).length).toBeGreaterThanOrEqual(1);
    const fired = (await firings.getJobs(['completed'])).filter((j) => j.data.scheduleId === made.schedule.id);
    expect(new Set(fired.map((j) => j.id)).size).toBe(fired.length);
    expect(fired.length).toBeGreaterThanOrEqual(counts.size);
    expect(await firings.getJobScheduler(made.schedule.id)).toBeUndefined();
  }, 90_000);

  it('a schedule whose last 3 firings failed is paused, its conversation told once, and fires no more', async () => {
    const made = await book.create(h.message('fl', 'make it'), { when: '*/2 * * * * *', timezone: 'UTC', prompt: 'fl tick' });
    if (!made.ok) throw new Error(made.error);
    const id = made.schedule.id;
    await waitFor('the schedule paused', async () => (await book.get(id))?.state === 'paused', 30_000, 200);
    await sleep(4_500);

    const schedule = await book.get(id);
    expect(schedule).toMatchObject({ state: 'paused', pausedBy: 'failures', failures: 3 });
    expect(schedule?.next).toBeUndefined();
    expect(await firings.getJobScheduler(id)).toBeUndefined();
    expect((await scheduledEnded('fl')).size).toBe(3);
    const notices = (await h.events('fl')).filter((e) => e.type === 'post' && e.text.startsWith('I paused the schedule'));
    expect(notices).toHaveLength(1);
    expect(requestsFor('fl ')).toHaveLength(3);

    // An operator's resume starts it again with a clean count.
    const resumed = await book.resume(id);
    expect(resumed).toMatchObject({ state: 'active', failures: 0 });
    expect(resumed?.next).toBeGreaterThan(Date.now() - 1_000);
    await book.remove(made.schedule);
  }, 60_000);

  it('a scheduled run cannot make schedules, and a tool that needs approval is refused at once (nobody is there to click)', async () => {
    const made = await book.create(h.message('rt', 'make it'), {
      when: new Date(Date.now() + 2_000).toISOString(),
      timezone: 'Europe/Berlin',
      prompt: 'rt once',
    });
    if (!made.ok) throw new Error(made.error);
    await waitFor('the one-off answered', async () => (await scheduledEnded('rt')).size === 1, 20_000, 100);

    const last = requestsFor('rt ').at(-1)!.body.messages as ChatMessage[];
    const results = last.filter((m) => m.role === 'tool').map((m) => String(m.content));
    expect(results[0]).toMatch(/^Error: A scheduled run cannot create schedules/);
    expect(results[1]).toMatch(/^Error: not run: write_file needs a person's approval, and this is a scheduled run/);
    const answers = (await h.events('rt')).filter((e) => e.type === 'post' && e.kind === 'answer');
    expect(answers.map((e) => (e.type === 'post' ? e.text : ''))).toEqual(['did what I could']);
    // Nothing made, nothing written, nobody asked; the one-off is gone from the list once fired.
    expect(await book.ofSession(sessionKeyOf({ platform: 'terminal', conversation: 'rt' }))).toEqual([]);
    expect(await h.redis.keys(`${h.prefix}:approval:*`)).toEqual([]);
    const folder = join(h.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'terminal', conversation: 'rt' })));
    await expect(access(join(folder, 'report.txt'))).rejects.toThrow();
    // The model was told it is a scheduled turn, with the firing time in the schedule's zone.
    const user = last.find((m) => m.role === 'user' && String(m.content).startsWith('[Scheduled task'));
    expect(String(user?.content)).toMatch(
      new RegExp(`^\\[Scheduled task "rt once" \\(${made.schedule.id}\\), firing of .* Europe/Berlin\\..*\\]\\n\\nrt once$`, 's'),
    );
  }, 60_000);

  // Last: it kills the workers.
  it('firings missed while no worker ran are run once on recovery, not once per missed firing', async () => {
    const made = await book.create(h.message('dn', 'make it'), { when: '*/2 * * * * *', timezone: 'UTC', prompt: 'dn tick' });
    if (!made.ok) throw new Error(made.error);
    await waitFor('a first firing answered', async () => (await scheduledEnded('dn')).size >= 1, 20_000, 100);
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    const down = Date.now();
    // Four firing times pass with no worker.
    await sleep(8_000);
    const up = Date.now();
    await h.addWorkers(1);
    await waitFor(
      'the schedule firing on time again',
      async () => [...(await scheduledEnded('dn')).keys()].some((id) => firedAt(id) > up + 2_000),
      30_000,
      200,
    );
    await book.remove(made.schedule);
    await sleep(1_500);

    const counts = await scheduledEnded('dn');
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    const missed = [...counts.keys()].map(firedAt).filter((t) => t > down + 500 && t < up);
    expect(missed).toHaveLength(1);
  }, 120_000);
});
