import { afterEach, describe, expect, it } from 'vitest';
import type { Stack } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/processes.js';
import { startFakeSlack, type FakeSlack } from '../../fakes/slack-server.js';
import type { RecordedRequest } from '../../fakes/openai-server.js';
import { createFiringQueue, type FiringQueue } from '../../../src/schedules/schedule-book.js';
import { describeTime } from '../../../src/schedules/when.js';
import type { RunResult } from '../../../src/queue/job-data.js';
import { answers, appMention, eventCallback, newUserTexts, nextTs, postCommand, postEvent, startSlackStack } from './helpers.js';

const CHANNEL = 'C0SCHED';
const TOKEN = 'admin-token-for-tests-0123';
const bearer = { authorization: `Bearer ${TOKEN}` };

type Message = { role: string; content: unknown; tool_calls?: { function: { name: string; arguments: string } }[] };
const messagesOf = (req: RecordedRequest): Message[] => req.body.messages as Message[];
const lastOf = (req: RecordedRequest): Message => messagesOf(req).at(-1)!;
/** The `tool` messages a request carries (the results of the previous step's calls). */
const toolResults = (req: RecordedRequest): string[] =>
  messagesOf(req)
    .filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
const isFiring = (req: RecordedRequest): boolean => newUserTexts(req.body).some((t) => t.startsWith('[Scheduled task'));

describe('slack channel: schedules made from the chat fire into their thread', () => {
  let stack: Stack | undefined;
  let slack: FakeSlack | undefined;
  let firings: FiringQueue | undefined;

  async function start(name: string): Promise<{ stack: Stack; slack: FakeSlack; firings: FiringQueue }> {
    slack = await startFakeSlack();
    stack = await startSlackStack(name, slack, { ADMIN_TOKEN: TOKEN, SCHEDULE_MIN_INTERVAL_S: '1' });
    firings = createFiringQueue(stack.config.queue.prefix, stack.redis);
    return { stack, slack, firings };
  }

  afterEach(async () => {
    await firings?.close();
    await stack?.close();
    await slack?.close();
    firings = undefined;
    stack = undefined;
    slack = undefined;
  });

  it('a one-off asked for in a channel thread fires once, ~3 s later, and its answer is posted in that thread', { timeout: 90_000 }, async () => {
    const { stack, slack, firings } = await start('slack-sched-once');
    const ts = nextTs();
    let at = 0;
    // The time is chosen when the model is asked (a loaded machine may take a while to get there).
    stack.fake.setHandler((req) => {
      if (isFiring(req)) return { content: 'Time to stretch, Ada!' };
      if (lastOf(req).role === 'tool') return { content: 'Done: I will remind you in a few seconds.' };
      const when = Date.now() + 3_000;
      at = Math.ceil(when / 1000) * 1000;
      return {
        content: null,
        toolCalls: [
          {
            name: 'schedule_task',
            arguments: JSON.stringify({ when: new Date(when).toISOString(), timezone: 'Europe/Berlin', prompt: 'Remind Ada to stretch.', name: 'stretch' }),
          },
        ],
      };
    });
    expect((await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'remind me to stretch in 3 seconds')))).status).toBe(200);

    // The turn's answer, in the thread.
    await waitFor('the answer to the mention', () => answers(slack).some((m) => m.text.includes('Done: I will remind you')), 30_000);
    const [, second] = stack.fake.requests;
    const [result, ...otherResults] = toolResults(second!);
    expect(otherResults).toEqual([]);
    expect(result).toMatch(/^Scheduled [a-z0-9]{6} "stretch" \(once, Europe\/Berlin\)\. Next firing: /);
    const id = /^Scheduled ([a-z0-9]{6}) /.exec(result!)![1]!;
    expect(result).toContain(describeTime(at, 'Europe/Berlin'));
    await waitFor('the mention turn to settle', () => slack.reactions.get(`${CHANNEL}:${ts}`)?.includes('white_check_mark'), 30_000);
    const reactionCalls = slack.calls.filter((c) => c.method.startsWith('reactions.')).length;

    // The firing: a model request of its own, with the preamble and the prompt.
    const firing = await waitFor('the firing to reach the model', () => stack.fake.requests.find(isFiring), 30_000);
    expect(firing.at).toBeGreaterThanOrEqual(at);
    expect(newUserTexts(firing.body)).toEqual([expect.stringMatching(/^\[Scheduled task "stretch" \([a-z0-9]{6}\), firing of /)]);
    const [text] = newUserTexts(firing.body);
    expect(text!.startsWith(`[Scheduled task "stretch" (${id}), firing of ${describeTime(at, 'Europe/Berlin')}.`)).toBe(true);
    expect(text!.endsWith(']\n\nRemind Ada to stretch.')).toBe(true);

    const posted = await waitFor(
      'the scheduled answer',
      () => {
        const found = answers(slack).filter((m) => m.text.includes('Time to stretch'));
        return found.length > 0 && found;
      },
      30_000,
    );
    expect(posted.map((m) => ({ channel: m.channel, thread_ts: m.thread_ts, text: m.text }))).toEqual([
      { channel: CHANNEL, thread_ts: ts, text: 'Time to stretch, Ada!' },
    ]);
    // The run that answered it took exactly the firing's message.
    const firingRun = await waitFor(
      'the scheduled run to complete',
      async () => {
        const done = await stack.queue.getJobs(['completed']);
        return done.map((j) => j.returnvalue as RunResult).find((r) => r?.messageIds.some((m) => m.startsWith('sched-')));
      },
      30_000,
    );
    expect(firingRun.messageIds).toEqual([`sched-${id}-${at}`]);
    expect(firingRun.delivered).toEqual([posted[0]!.ts]);

    // Once: nothing more comes, and nobody's message got reactions for it.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(answers(slack).filter((m) => m.text.includes('Time to stretch'))).toHaveLength(1);
    expect(stack.fake.requests.filter(isFiring)).toHaveLength(1);
    expect(stack.fake.requests).toHaveLength(3);
    expect(slack.calls.filter((c) => c.method.startsWith('reactions.')).length).toBe(reactionCalls);
    expect(slack.reactionLog.get(`${CHANNEL}:${ts}`)).toEqual(['+eyes', '-eyes', '+white_check_mark']);

    // A one-off that fired is gone: from the admin list and from BullMQ.
    const list = await fetch(`${stack.baseUrl}/admin/api/schedules`, { headers: bearer });
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual({ schedules: [] });
    expect((await fetch(`${stack.baseUrl}/admin/api/schedules/${id}`, { headers: bearer })).status).toBe(404);
    expect(await firings.getJobScheduler(id)).toBeUndefined();
  });

  it('/ask schedules lists a cron schedule made through /ask, /ask unschedule <id> removes it and its job scheduler', { timeout: 60_000 }, async () => {
    const { stack, slack, firings } = await start('slack-sched-cron');
    stack.fake.script([
      {
        content: null,
        toolCalls: [
          {
            name: 'schedule_task',
            arguments: JSON.stringify({
              when: '0 9 * * 1-5',
              timezone: 'America/New_York',
              prompt: 'Check the nightly build and say whether it is green.',
              name: 'build check',
            }),
          },
        ],
      },
      { content: 'Every weekday at 9:00 New York time I will check the build.' },
    ]);
    const ask = await postCommand(stack.baseUrl, {
      channel_id: CHANNEL,
      user_id: 'U0ADA',
      text: 'every weekday at 9am New York time, check the nightly build',
    });
    expect(await ask.json()).toEqual({ response_type: 'ephemeral', text: 'Working on it — the answer will appear here.' });
    await waitFor('the answer', () => answers(slack).some((m) => m.text.includes('I will check the build')), 30_000);
    const [result] = toolResults(stack.fake.requests[1]!);
    expect(result).toMatch(/^Scheduled [a-z0-9]{6} "build check" \(cron "0 9 \* \* 1-5", America\/New_York\)\. Next firings: /);
    const id = /^Scheduled ([a-z0-9]{6}) /.exec(result!)![1]!;
    const scheduler = await firings.getJobScheduler(id);
    expect(scheduler).toMatchObject({ key: id, pattern: '0 9 * * 1-5', tz: 'America/New_York' });
    expect(scheduler!.next).toBeGreaterThan(Date.now());

    const list = await postCommand(stack.baseUrl, { channel_id: CHANNEL, user_id: 'U0ADA', text: 'schedules' });
    expect(list.status).toBe(200);
    const listed = ((await list.json()) as { text: string }).text;
    expect(listed).toContain(`- ${id} · "build check" · cron "0 9 * * 1-5" in America/New_York · next `);
    // The next firing as BullMQ will do it: 09:00 on a weekday, New York time.
    expect(listed).toContain(`next ${describeTime(scheduler!.next!, 'America/New_York')}`);
    expect(listed).toMatch(/next (Mon|Tue|Wed|Thu|Fri) \d{1,2} \w{3} \d{4}, 09:00 America\/New_York/);

    const removed = await postCommand(stack.baseUrl, { channel_id: CHANNEL, user_id: 'U0ADA', text: `unschedule ${id}` });
    expect(((await removed.json()) as { text: string }).text).toBe(`Removed ${id} "build check": it will not fire again.`);
    expect(await firings.getJobScheduler(id)).toBeUndefined();
    expect(await firings.getJobSchedulersCount()).toBe(0);
    const again = await postCommand(stack.baseUrl, { channel_id: CHANNEL, user_id: 'U0ADA', text: 'schedules' });
    expect(((await again.json()) as { text: string }).text).toMatch(/^No schedules in this conversation\./);
    const twice = await postCommand(stack.baseUrl, { channel_id: CHANNEL, user_id: 'U0ADA', text: `unschedule ${id}` });
    expect(((await twice.json()) as { text: string }).text).toBe(
      `No schedule "${id}" in this conversation. /schedules lists them (a thread's schedules are listed in that thread).`,
    );
    // The commands were answered at once: no model call beyond the scheduling turn's two.
    expect(stack.fake.requests).toHaveLength(2);
    stack.fake.assertDone();
  });
});
