import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { waitFor } from '../../helpers/processes.js';
import { TelegramHarness } from './harness.js';

const lastUser = (messages: ChatMessage[]) => String([...messages].reverse().find((m) => m.role === 'user')?.content ?? '');

describe('telegram: a reply Telegram refuses for good does not hold its session', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-undeliverable');
    h.stack.fake.setHandler((req) => {
      const text = lastUser(req.body.messages as ChatMessage[]);
      return { content: `ack: ${text}`, delayMs: text.includes('first') ? 800 : 0 };
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is settled as undeliverable (run record, metric, a failed job never retried) and the next message is answered', async () => {
    const chat = 3001;
    // Every attempt to post the first answer is refused as a blocked bot would be.
    // (The answer is edited into its placeholder: the edit carries its text.)
    h.tg.fault({
      method: 'editMessageText',
      when: (b) => String(b.text).includes('first'),
      status: 403,
      description: 'Forbidden: bot was blocked by the user',
      times: 100,
    });
    h.dm(chat, 'the first question');
    await waitFor('the first run to start', () => h.stack.fake.requests.length === 1, 10_000);
    h.dm(chat, 'the second question');

    await waitFor('the second answer', () => h.answers(chat).some((c) => c.body.text === 'ack: the second question'), 20_000);
    const refused = h.callsFor(chat).filter((c) => c.method === 'editMessageText' && c.error === 403);
    expect(refused).toHaveLength(1);
    const job = await waitFor('the first job', async () => (await h.stack.queue.getJobs(['failed'])).find((j) => j.failedReason?.startsWith('undeliverable')));
    expect(job!.failedReason).toMatch(/^undeliverable: .*403.*blocked/);
    // Failed as unrecoverable: one attempt, not retried by BullMQ.
    expect(job!.attemptsMade).toBe(1);
    const record = await waitFor('its run record', () => h.stack.redis.get(`${h.stack.config.queue.prefix}:run:${job!.data.runId}`));
    expect(JSON.parse(record!)).toMatchObject({
      undeliverable: expect.stringMatching(/blocked/),
      journal: expect.arrayContaining([expect.objectContaining({ t: 'undeliverable' })]),
    });
    expect(await h.stack.metrics.registry.getSingleMetricAsString('switchboard_undeliverable_replies_total')).toMatch(/platform="telegram"} 1/);
  }, 40_000);
});
