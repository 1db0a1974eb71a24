import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import type { InboundMessage } from '../../src/channels/types.js';
import { createFiringQueue, ScheduleBook, type FiringQueue } from '../../src/schedules/schedule-book.js';
import { nextFirings } from '../../src/schedules/when.js';

const TOKEN = 'admin-token-for-tests-0123';
const bearer = { authorization: `Bearer ${TOKEN}` };
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const WEEKDAYS_9 = '0 9 * * 1-5';

let seq = 0;
/** A Telegram DM message from `user`: what a schedule is made from. */
function from(user = '42'): InboundMessage {
  const id = `tg-${user}-${++seq}`;
  return {
    v: 1,
    id,
    platform: 'telegram',
    conversation: user,
    sender: { id: user },
    where: { kind: 'dm' },
    text: 'x',
    attachments: [],
    eventId: id,
    receivedAt: Date.now(),
  };
}

async function call(stack: Stack, method: string, path: string, headers: Record<string, string> = bearer): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}/admin/api/schedules${path}`, { method, headers });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').includes('application/json');
  return { status: res.status, body: json ? JSON.parse(text) : text };
}

/** A schedule book of the stack's own prefix, as the roles make it. */
function bookOf(stack: Stack, perUser = 10): { book: ScheduleBook; queue: FiringQueue } {
  const queue = createFiringQueue(stack.config.queue.prefix, stack.redis);
  return { book: new ScheduleBook(stack.redis, stack.config.queue.prefix, queue, { perUser, minIntervalMs: 1_000 }), queue };
}

async function created(book: ScheduleBook, message: InboundMessage, when: string, tz: string, prompt: string) {
  const made = await book.create(message, { when, timezone: tz, prompt });
  if (!made.ok) throw new Error(`create failed: ${made.error}`);
  return made.schedule;
}

describe('admin API for schedules (/admin/api/schedules)', () => {
  let stack: Stack;
  let book: ScheduleBook;
  let queue: FiringQueue;
  const extra: FiringQueue[] = [];
  beforeAll(async () => {
    stack = await startStack('sched-api', { ADMIN_TOKEN: TOKEN });
    ({ book, queue } = bookOf(stack));
  });
  afterAll(async () => {
    for (const q of extra) await q.close();
    await queue?.close();
    await stack?.close();
  });

  it('lists every schedule with its state and next firing (ms and ISO); 401 without the token', async () => {
    const now = Date.now();
    const cron = await created(book, from('101'), WEEKDAYS_9, 'America/New_York', 'Check the build.');
    const inTwoDays = new Date(now + 2 * 86_400_000).toISOString();
    const once = await created(book, from('101'), inTwoDays, 'Europe/Berlin', 'Water the plants.');

    const res = await call(stack, 'GET', '/');
    expect(res.status).toBe(200);
    const mine = (res.body.schedules as any[]).filter((s) => s.id === cron.id || s.id === once.id);
    expect(mine).toHaveLength(2);
    const c = mine.find((s) => s.id === cron.id)!;
    const o = mine.find((s) => s.id === once.id)!;
    expect(c).toMatchObject({
      state: 'active',
      name: 'Check the build.',
      owner: 'telegram:101',
      session: 'telegram:101',
      when: WEEKDAYS_9,
      spec: { kind: 'cron', pattern: WEEKDAYS_9, tz: 'America/New_York' },
      failures: 0,
      firings: 0,
    });
    // BullMQ's next firing, the same the cron library gives.
    expect(c.next).toBe(nextFirings(WEEKDAYS_9, 'America/New_York', Date.now(), 1)[0]);
    expect(c.nextAt).toMatch(ISO);
    expect(c.nextAt).toBe(new Date(c.next).toISOString());
    expect(o).toMatchObject({ state: 'active', spec: { kind: 'once', tz: 'Europe/Berlin', at: Math.ceil(Date.parse(inTwoDays) / 1000) * 1000 } });
    expect(o.next).toBe(o.spec.at);
    expect(o.nextAt).toBe(new Date(o.spec.at).toISOString());

    const one = await call(stack, 'GET', `/${cron.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: cron.id, state: 'active', next: c.next, nextAt: c.nextAt });

    expect((await call(stack, 'GET', '/', {})).status).toBe(401);
    expect((await call(stack, 'GET', `/${cron.id}`, { authorization: 'Bearer wrong-token-xxxxxxxx' })).status).toBe(401);
  });

  it('pause removes the job scheduler and the next firing; resume brings both back; delete removes both; unknown ids are 404', async () => {
    const s = await created(book, from('102'), WEEKDAYS_9, 'Asia/Tokyo', 'Morning digest.');
    expect(await queue.getJobScheduler(s.id)).toMatchObject({ key: s.id, pattern: WEEKDAYS_9, tz: 'Asia/Tokyo' });

    const paused = await call(stack, 'POST', `/${s.id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ id: s.id, state: 'paused', pausedBy: 'operator' });
    expect(paused.body).not.toHaveProperty('next');
    expect(paused.body).not.toHaveProperty('nextAt');
    expect(await queue.getJobScheduler(s.id)).toBeUndefined();
    const shown = await call(stack, 'GET', `/${s.id}`);
    expect(shown.body).toMatchObject({ state: 'paused', pausedBy: 'operator' });
    expect(shown.body).not.toHaveProperty('next');
    // Paused twice is still paused (and still no scheduler).
    expect((await call(stack, 'POST', `/${s.id}/pause`)).body).toMatchObject({ state: 'paused' });
    expect(await queue.getJobScheduler(s.id)).toBeUndefined();

    const resumed = await call(stack, 'POST', `/${s.id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ id: s.id, state: 'active', failures: 0 });
    expect(resumed.body).not.toHaveProperty('pausedBy');
    expect(resumed.body.next).toBeGreaterThan(Date.now());
    expect(resumed.body.next).toBe(nextFirings(WEEKDAYS_9, 'Asia/Tokyo', Date.now(), 1)[0]);
    expect(resumed.body.nextAt).toBe(new Date(resumed.body.next).toISOString());
    expect(await queue.getJobScheduler(s.id)).toMatchObject({ key: s.id, pattern: WEEKDAYS_9, tz: 'Asia/Tokyo', next: resumed.body.next });

    const deleted = await call(stack, 'DELETE', `/${s.id}`);
    expect(deleted).toEqual({ status: 200, body: { deleted: true, id: s.id } });
    expect((await call(stack, 'GET', `/${s.id}`)).status).toBe(404);
    expect(await queue.getJobScheduler(s.id)).toBeUndefined();
    expect(await book.store.get(s.id)).toBeUndefined();
    expect((await book.ofSession('telegram:102')).map((x) => x.id)).toEqual([]);
    expect((await call(stack, 'GET', '/')).body.schedules.map((x: { id: string }) => x.id)).not.toContain(s.id);

    for (const id of [s.id, 'zzzzzz', 'NOT-AN-ID']) {
      for (const [method, path] of [
        ['GET', `/${id}`],
        ['POST', `/${id}/pause`],
        ['POST', `/${id}/resume`],
        ['DELETE', `/${id}`],
      ] as const) {
        const res = await call(stack, method, path);
        expect([method, path, res.status, res.body]).toEqual([method, path, 404, { error: 'no such schedule' }]);
      }
    }
    // A 404 pause or resume made nothing: no record, no scheduler.
    expect(await stack.redis.exists(`${stack.config.queue.prefix}:schedule:zzzzzz`)).toBe(0);
    expect(await queue.getJobScheduler('zzzzzz')).toBeUndefined();
  });

  it('SCHEDULES_PER_USER: the third schedule is refused, and two racing for the last slot get one', async () => {
    const small = bookOf(stack, 2);
    extra.push(small.queue);
    await created(small.book, from('103'), WEEKDAYS_9, 'UTC', 'one');
    await created(small.book, from('103'), '30 9 * * 1-5', 'UTC', 'two');
    const third = await small.book.create(from('103'), { when: '0 10 * * *', timezone: 'UTC', prompt: 'three' });
    expect(third.ok).toBe(false);
    expect(!third.ok && third.error).toContain('SCHEDULES_PER_USER=2');
    // Someone else is not limited by it.
    expect((await small.book.create(from('104'), { when: '0 10 * * *', timezone: 'UTC', prompt: 'theirs' })).ok).toBe(true);

    const race = await Promise.all([
      small.book.create(from('104'), { when: '0 11 * * *', timezone: 'UTC', prompt: 'racer a' }),
      small.book.create(from('104'), { when: '0 12 * * *', timezone: 'UTC', prompt: 'racer b' }),
    ]);
    expect(race.filter((r) => r.ok)).toHaveLength(1);
    const loser = race.find((r) => !r.ok);
    expect(loser && !loser.ok && loser.error).toContain('SCHEDULES_PER_USER=2');
    const theirs = (await small.book.all()).filter((s) => s.owner === 'telegram:104');
    expect(theirs.map((s) => s.prompt).sort()).toEqual(['theirs', race[0]!.ok ? 'racer a' : 'racer b'].sort());
    // Only the schedules that were made have a job scheduler.
    const schedulers = new Set((await queue.getJobSchedulers()).map((j) => j.key));
    for (const s of theirs) expect(schedulers.has(s.id)).toBe(true);
    const all = await small.book.all();
    expect(all.filter((s) => s.owner === 'telegram:103')).toHaveLength(2);
    expect([...schedulers].filter((k) => !all.some((s) => s.id === k))).toEqual([]);
  });

  it("the dashboard's API lists the firings queue and its job schedulers", async () => {
    const s = await created(book, from('105'), WEEKDAYS_9, 'Europe/Berlin', 'Board check.');
    const res = await fetch(`${stack.baseUrl}/admin/queues/api/queues`, { headers: bearer });
    expect(res.status).toBe(200);
    const queues = ((await res.json()) as { queues: { name: string; displayName?: string; readOnlyMode?: boolean }[] }).queues;
    expect(queues.map((q) => q.name).sort()).toEqual([stack.queue.name, 'firings'].sort());
    expect(queues.find((q) => q.name === 'firings')).toMatchObject({ displayName: 'schedule firings', readOnlyMode: true });
    const schedulers = await fetch(`${stack.baseUrl}/admin/queues/api/job-schedulers?queueName=firings`, { headers: bearer });
    expect(schedulers.status).toBe(200);
    // bull-board names a scheduler's key `id`.
    const listed = ((await schedulers.json()) as { schedulers: { id: string; queueName: string; pattern?: string; tz?: string }[] }).schedulers;
    expect(listed.find((j) => j.id === s.id)).toMatchObject({ queueName: 'firings', pattern: WEEKDAYS_9, tz: 'Europe/Berlin' });
    expect((await fetch(`${stack.baseUrl}/admin/queues/api/queues`)).status).toBe(401);
  });
});

describe('read-only admin API for schedules (ADMIN_READONLY=1)', () => {
  let stack: Stack | undefined;
  let queue: FiringQueue | undefined;
  afterEach(async () => {
    await queue?.close();
    await stack?.close();
    queue = undefined;
    stack = undefined;
  });

  it('refuses pause, resume and delete with 403 and changes nothing; GET still answers', async () => {
    stack = await startStack('sched-api-ro', { ADMIN_TOKEN: TOKEN, ADMIN_READONLY: '1' });
    const made = bookOf(stack);
    queue = made.queue;
    const s = await created(made.book, from('201'), WEEKDAYS_9, 'UTC', 'Read-only check.');
    for (const [method, path] of [
      ['POST', `/${s.id}/pause`],
      ['POST', `/${s.id}/resume`],
      ['DELETE', `/${s.id}`],
    ] as const) {
      const res = await call(stack, method, path);
      expect([method, path, res.status]).toEqual([method, path, 403]);
    }
    expect(await made.book.store.get(s.id)).toMatchObject({ state: 'active' });
    expect(await queue.getJobScheduler(s.id)).toMatchObject({ key: s.id });
    const list = await call(stack, 'GET', '/');
    expect(list.status).toBe(200);
    expect(list.body.schedules).toEqual([expect.objectContaining({ id: s.id, state: 'active', next: expect.any(Number), nextAt: expect.stringMatching(ISO) })]);
    expect((await call(stack, 'GET', `/${s.id}`)).status).toBe(200);
  });
});
