import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { createFiringQueue, ScheduleBook, type FiringQueue } from '../../../src/schedules/schedule-book.js';
import type { RecordedRequest, Step } from '../../fakes/openai-server.js';
import { waitFor } from '../../helpers/processes.js';
import { TelegramHarness } from './harness.js';
import { PairingStore } from '../../../src/access/pairing-store.js';

const messagesOf = (req: RecordedRequest) => req.body.messages as ChatMessage[];
const lastUser = (req: RecordedRequest) => String([...messagesOf(req)].reverse().find((m) => m.role === 'user')?.content ?? '');
const toolResults = (req: RecordedRequest) =>
  messagesOf(req)
    .filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A scripted model for schedules: a request naming `schedule:<json args>` calls schedule_task
 * with those arguments, then answers with what the tool said; a scheduled turn is answered
 * "scheduled answer: <prompt>"; anything else "ack".
 */
function scheduleModel(req: RecordedRequest): Step {
  const results = toolResults(req);
  const user = lastUser(req);
  if (user.startsWith('[Scheduled task')) return { content: `scheduled answer: ${user.slice(user.indexOf('\n\n') + 2)}` };
  const ask = /^schedule:(.*)$/s.exec(user);
  if (ask && results.length === 0) return { toolCalls: [{ name: 'schedule_task', arguments: ask[1]! }] };
  if (results.length > 0) return { content: `tool said: ${results.at(-1)}` };
  return { content: 'ack' };
}

describe('telegram: schedules made in a DM fire and answer in that DM', () => {
  let h: TelegramHarness;
  let firings: FiringQueue;
  let book: ScheduleBook;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-sched', { ADMIN_TOKEN: 'sched-admin-token-0123456789' });
    h.stack.fake.setHandler(scheduleModel);
    firings = createFiringQueue(h.stack.config.queue.prefix, h.stack.redis);
    book = new ScheduleBook(h.stack.redis, h.stack.config.queue.prefix, firings, h.stack.config.schedules);
  });
  afterAll(async () => {
    await firings?.close();
    await h?.close();
  });

  const answerTexts = (chat: number) => h.answers(chat).map((c) => String(c.body.text));

  it('a one-off made through the model fires a few seconds later, answered once in the same chat, marked scheduled', async () => {
    const chat = 5101;
    const at = new Date(Date.now() + 3_000).toISOString();
    h.dm(chat, `schedule:${JSON.stringify({ when: at, timezone: 'Europe/Berlin', prompt: 'summarise yesterday', name: 'notes summary' })}`);
    await waitFor('the schedule confirmed', () => answerTexts(chat).length === 1, 20_000);
    expect(answerTexts(chat)[0]).toMatch(/^tool said: Scheduled [a-z2-9]{6} "notes summary" \(once, Europe\/Berlin\)\. Next firing: .* Europe\/Berlin\./);
    const id = /Scheduled ([a-z2-9]{6})/.exec(answerTexts(chat)[0]!)![1]!;

    await waitFor('the firing answered', () => answerTexts(chat).length === 2, 20_000);
    expect(answerTexts(chat)[1]).toBe('scheduled answer: summarise yesterday');
    const firingRequest = h.stack.fake.requests.find((r) => lastUser(r).startsWith('[Scheduled task'))!;
    expect(lastUser(firingRequest)).toMatch(new RegExp(`^\\[Scheduled task "notes summary" \\(${id}\\), firing of `));
    // Same conversation: the firing's turn saw the earlier exchange as history.
    expect(messagesOf(firingRequest).some((m) => m.role === 'user' && String(m.content).startsWith('schedule:'))).toBe(true);
    await sleep(2_500);
    expect(answerTexts(chat)).toHaveLength(2);
    expect(await h.stack.metrics.registry.getSingleMetricAsString('switchboard_schedule_firings_total')).toContain(
      'switchboard_schedule_firings_total{outcome="completed"} 1',
    );
    // The run is marked scheduled in its job and record; the one-off left the list once fired.
    const jobs = await h.stack.queue.getJobs(['completed']);
    const job = jobs.find((j) => j.name.startsWith(`scheduled ${id} · telegram ${chat}`));
    expect(job?.data.messages?.[0]?.scheduled).toMatchObject({ id, name: 'notes summary', tz: 'Europe/Berlin' });
    const run = await fetchRun(job!.data.runId!);
    expect(run).toMatch(/scheduled<\/span> [a-z2-9]{6} “notes summary”/);
    expect(await book.ofSession(sessionKeyOf({ platform: 'telegram', conversation: String(chat) }))).toEqual([]);
  }, 45_000);

  it('without a timezone (and no SCHEDULE_TZ) the tool refuses and the model is asked to ask; nothing is scheduled', async () => {
    const chat = 5102;
    h.dm(chat, `schedule:${JSON.stringify({ when: '0 9 * * 1-5', prompt: 'summarise yesterday' })}`);
    await waitFor('the answer', () => answerTexts(chat).length === 1, 20_000);
    expect(answerTexts(chat)[0]).toMatch(/^tool said: Error: A timezone is needed .* ask the person which timezone they mean/);
    expect(await book.ofSession(sessionKeyOf({ platform: 'telegram', conversation: String(chat) }))).toEqual([]);
  }, 30_000);

  it('/schedules lists the chat’s schedules with the next firing in their timezone; /unschedule removes one; another chat cannot', async () => {
    const chat = 5103;
    h.dm(chat, `schedule:${JSON.stringify({ when: '0 9 * * 1-5', timezone: 'America/New_York', prompt: 'weekday digest' })}`);
    await waitFor('the schedule confirmed', () => answerTexts(chat).length === 1, 20_000);
    const id = /Scheduled ([a-z2-9]{6})/.exec(answerTexts(chat)[0]!)![1]!;

    h.dm(chat, '/schedules');
    await waitFor('the list', () => answerTexts(chat).length === 2, 10_000);
    expect(answerTexts(chat)[1]).toContain(`${id} · "weekday digest" · cron "0 9 * * 1-5" in America/New_York · next `);
    expect(answerTexts(chat)[1]).toMatch(/next (Mon|Tue|Wed|Thu|Fri) \d+ \w+ \d{4}, 09:00 America\/New_York/);

    // Another chat does not see it and cannot remove it.
    h.dm(5104, `/unschedule ${id}`);
    await waitFor('the refusal', () => answerTexts(5104).length === 1, 10_000);
    expect(answerTexts(5104)[0]).toBe(`No schedule "${id}" in this conversation. /schedules lists them (a thread's schedules are listed in that thread).`);
    expect(await firings.getJobScheduler(id)).toBeDefined();

    h.dm(chat, `/unschedule ${id}`);
    await waitFor('removed', () => answerTexts(chat).length === 3, 10_000);
    expect(answerTexts(chat)[2]).toBe(`Removed ${id} "weekday digest": it will not fire again.`);
    expect(await firings.getJobScheduler(id)).toBeUndefined();
    h.dm(chat, '/schedules');
    await waitFor('the empty list', () => answerTexts(chat).length === 4, 10_000);
    expect(answerTexts(chat)[3]).toMatch(/^No schedules in this conversation/);
  }, 45_000);

  async function fetchRun(runId: string): Promise<string> {
    const res = await fetch(`${h.stack.baseUrl}/admin/runs/${encodeURIComponent(runId)}`, {
      headers: { authorization: `Bearer ${h.stack.config.adminToken}` },
    });
    return res.text();
  }
});

describe('telegram: SCHEDULE_TZ is the tool’s timezone when the model gives none', () => {
  it('a schedule without a timezone takes SCHEDULE_TZ', async () => {
    const h = await TelegramHarness.start('tg-sched-tz', { SCHEDULE_TZ: 'Asia/Tokyo', ADMIN_TOKEN: 'sched-admin-token-0123456789' });
    try {
      h.stack.fake.setHandler(scheduleModel);
      const chat = 5201;
      h.dm(chat, `schedule:${JSON.stringify({ when: '30 8 * * *', prompt: 'morning' })}`);
      await waitFor('the schedule confirmed', () => h.answers(chat).length === 1, 20_000);
      expect(String(h.answers(chat)[0]!.body.text)).toMatch(
        /Scheduled [a-z2-9]{6} "morning" \(cron "30 8 \* \* \*", Asia\/Tokyo\)\. Next firings: .*, 08:30 Asia\/Tokyo; /,
      );
      // The admin API shows it with its zone and next firing.
      const res = await fetch(`${h.stack.baseUrl}/admin/api/schedules`, { headers: { authorization: 'Bearer sched-admin-token-0123456789' } });
      const body = (await res.json()) as { schedules: { spec: { tz: string }; nextAt: string; owner: string }[] };
      expect(body.schedules).toHaveLength(1);
      expect(body.schedules[0]).toMatchObject({ spec: { tz: 'Asia/Tokyo' }, owner: `telegram:${chat}` });
      expect(new Date(body.schedules[0]!.nextAt).getUTCMinutes()).toBe(30);
      expect(new Date(body.schedules[0]!.nextAt).getUTCHours()).toBe(23);
    } finally {
      await h.close();
    }
  }, 45_000);
});

describe('telegram: a schedule whose maker lost access does not fire for them', () => {
  it('DM_POLICY=pairing: approved, scheduled, revoked → the firing is dropped (counted refused), nothing asked or posted', async () => {
    const h = await TelegramHarness.start('tg-sched-revoked', { DM_POLICY: 'pairing' });
    try {
      h.stack.fake.setHandler(scheduleModel);
      const chat = 5301;
      const store = new PairingStore(h.stack.redis, h.stack.config.queue.prefix);
      await h.stack.redis.hset(
        `${h.stack.config.queue.prefix}:pairing:telegram:approved`,
        String(chat),
        JSON.stringify({ platform: 'telegram', userId: String(chat), approvedAt: Date.now(), by: 'test' }),
      );
      const at = new Date(Date.now() + 3_000).toISOString();
      h.dm(chat, `schedule:${JSON.stringify({ when: at, timezone: 'UTC', prompt: 'secret report' })}`);
      await waitFor('the schedule confirmed', () => h.answers(chat).length === 1, 20_000);
      expect(String(h.answers(chat)[0]!.body.text)).toMatch(/^tool said: Scheduled /);
      expect(await store.revoke('telegram', String(chat))).toBe(true);

      const metric = () => h.stack.metrics.registry.getSingleMetricAsString('switchboard_schedule_firings_total');
      await waitFor('the firing refused', async () => (await metric()).includes('{outcome="refused"} 1'), 20_000);
      await sleep(1_000);
      expect(h.answers(chat)).toHaveLength(1);
      expect(h.stack.fake.requests.filter((r) => lastUser(r).startsWith('[Scheduled task'))).toEqual([]);
      // A one-off had its one chance: it is gone.
      expect(await h.stack.redis.keys(`${h.stack.config.queue.prefix}:schedule:*`)).toEqual([]);
    } finally {
      await h.close();
    }
  }, 45_000);
});
