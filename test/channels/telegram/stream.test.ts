import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INCOMPLETE_MARK } from '../../../src/run/delivery/reply.js';
import { GROUP_CHAT_GAP_MS, PRIVATE_CHAT_GAP_MS, STILL_WRITING } from '../../../src/channels/telegram/outbound.js';
import { PLACEHOLDER } from '../../../src/channels/kit/pieces.js';
import { waitFor } from '../../helpers/processes.js';
import { TelegramHarness } from './harness.js';
import { BOT_USERNAME } from '../../fakes/telegram-server.js';

const ANSWER = Array.from({ length: 12 }, (_, i) => `Paragraph ${i + 1}: the streamed answer grows while the model writes it, one piece at a time.`).join(
  '\n\n',
);

describe('telegram: STREAM_ANSWERS (the default) shows the answer as it is written, by edits of one message on the chat budget', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-stream', { AGENT_MODEL_RETRIES: '2' });
  });
  afterAll(async () => {
    await h?.close();
  });

  /** The run committed and its reply was delivered (the outbox is settled). */
  const ended = (chat: number, ms: number) =>
    waitFor(
      'the run to end',
      async () =>
        (await h.stack.redis.get(h.stack.keys.last(`telegram:${chat}`))) !== null &&
        (await h.stack.redis.exists(h.stack.keys.outbox(`telegram:${chat}`))) === 0,
      ms,
    );
  const streamed = (chat: number) => h.tg.sent.filter((m) => m.chatId === chat && !m.silent);
  const writes = (chat: number) =>
    h
      .callsFor(chat)
      .filter(
        (c) =>
          (c.method === 'sendMessage' && c.body.disable_notification !== true) ||
          (c.method === 'editMessageText' && c.body.text !== undefined && !String(c.body.text).startsWith('•')),
      );

  it('a private chat: growing edits of one message ≥ 1.1 s apart, the last one the exact formatted answer, shown once', async () => {
    const chat = 4101;
    h.stack.fake.script([{ content: `**Summary**\n\n${ANSWER}`, chunks: 8, chunkDelayMs: 500 }]);
    h.dm(chat, 'write a long answer');
    await ended(chat, 30_000);
    await sleep(200);

    const messages = streamed(chat);
    expect(messages).toHaveLength(1);
    const [answer] = messages;
    expect(answer!.parseMode).toBe('HTML');
    expect(answer!.raw.startsWith('<b>Summary</b>')).toBe(true);
    expect(answer!.text).toBe(`Summary\n\n${ANSWER}`);
    expect(answer!.edits).toBeGreaterThanOrEqual(3);

    const calls = h.callsFor(chat).filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText');
    const onAnswer = calls.filter((c) => (c.method === 'sendMessage' ? c.body.disable_notification !== true : Number(c.body.message_id) === answer!.messageId));
    // The stream grows: each write shows more of the answer than the one before, with the mark until the last.
    const texts = onAnswer.map((c) => String(c.body.text));
    for (let i = 1; i < texts.length - 1; i++) expect(texts[i]!.length).toBeGreaterThan(texts[i - 1]!.length);
    for (const t of texts.slice(0, -1)) expect(t.endsWith(STILL_WRITING)).toBe(true);
    // Every write to the chat (status and stream share one budget) is at least the private-chat gap apart.
    const all = calls.map((c) => c.at);
    for (let i = 1; i < all.length; i++) expect(all[i]! - all[i - 1]!).toBeGreaterThanOrEqual(PRIVATE_CHAT_GAP_MS - 15);
  });

  it('a group: the same, ≥ 3.1 s apart, as a reply to the request', { timeout: 60_000 }, async () => {
    const chat = -1004102;
    h.stack.fake.script([{ content: ANSWER, chunks: 6, chunkDelayMs: 1_000 }]);
    const { messageId } = h.group(chat, `@${BOT_USERNAME} write a long answer`, {
      entities: [{ type: 'mention', offset: 0, length: BOT_USERNAME.length + 1 }],
    });
    await ended(chat, 40_000);
    await sleep(200);
    const messages = streamed(chat);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.text).toBe(ANSWER);
    expect(messages[0]!.replyTo).toBe(messageId);
    expect(messages[0]!.edits).toBeGreaterThanOrEqual(1);
    const at = h
      .callsFor(chat)
      .filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText')
      .map((c) => c.at);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(GROUP_CHAT_GAP_MS - 15);
  });

  it('a 429 mid-stream is waited out (retry_after honoured); the final text is still exact and shown once', async () => {
    const chat = 4103;
    let armed = true;
    h.tg.fault({
      method: 'editMessageText',
      when: (b) => b.chat_id === chat && armed && ((armed = false), true),
      status: 429,
      description: 'Too Many Requests: retry after 3',
      parameters: { retry_after: 3 },
    });
    h.stack.fake.script([{ content: ANSWER, chunks: 8, chunkDelayMs: 500 }]);
    h.dm(chat, 'long answer please');
    await ended(chat, 40_000);
    await sleep(200);
    const limited = h.callsFor(chat).find((c) => c.error === 429)!;
    expect(limited).toBeDefined();
    const later = h.callsFor(chat).filter((c) => c.at > limited.at && (c.method === 'editMessageText' || c.method === 'sendMessage'));
    expect(later.length).toBeGreaterThan(0);
    for (const c of later) expect(c.at - limited.at).toBeGreaterThanOrEqual(3_000 - 15);
    expect(streamed(chat).map((m) => m.text)).toEqual([ANSWER]);
  });

  it('a run that fails after text was streamed keeps that text, marked incomplete, with the honest line', async () => {
    const chat = 4104;
    h.stack.fake.script([{ content: ANSWER, chunks: 10, chunkDelayMs: 400, breakAfterChunks: 2 }, { status: 500 }, { status: 500 }]);
    h.dm(chat, 'long answer please, failing');
    await ended(chat, 60_000);
    await sleep(200);
    const messages = streamed(chat);
    expect(messages).toHaveLength(1);
    const text = messages[0]!.text;
    const [shown, rest] = text.split(' …\n\n');
    // What was streamed stays (a part of the answer), then the mark and the honest line.
    expect(shown!.length).toBeGreaterThan(0);
    expect(ANSWER.startsWith(shown!)).toBe(true);
    expect(rest).toBe(`${INCOMPLETE_MARK.replace(/_/g, '')}\n\nI could not get an answer from the model (it kept failing). Please try again in a moment.`);
    expect(h.stack.fake.requests.filter((r) => JSON.stringify(r.body.messages).includes('long answer please, failing')).length).toBe(3);
  });

  it('a short answer is not streamed: it is posted once, as a placeholder the answer is edited into', async () => {
    const chat = 4105;
    h.stack.fake.script([{ content: 'Short and sweet.' }]);
    h.dm(chat, 'hi');
    await waitFor('the answer', () => h.answers(chat).length === 1, 20_000);
    expect(writes(chat).map((c) => [c.method, c.body.text])).toEqual([
      ['sendMessage', PLACEHOLDER],
      ['editMessageText', 'Short and sweet.'],
    ]);
  });
});

describe('telegram with TELEGRAM_DRAFTS=1: a private chat streams the answer as a draft, then posts it once', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-drafts', { TELEGRAM_DRAFTS: '1' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('growing drafts of one draft id, no message edited, the final answer one formatted message', async () => {
    const chat = 4201;
    h.stack.fake.script([{ content: `**Summary**\n\n${ANSWER}`, chunks: 6, chunkDelayMs: 500 }]);
    h.dm(chat, 'write a long answer');
    await waitFor(
      'the run to end',
      async () =>
        (await h.stack.redis.get(h.stack.keys.last(`telegram:${chat}`))) !== null &&
        (await h.stack.redis.exists(h.stack.keys.outbox(`telegram:${chat}`))) === 0,
      30_000,
    );
    const drafts = h.tg.drafts.filter((d) => d.chatId === chat);
    expect(drafts.length).toBeGreaterThanOrEqual(2);
    expect(new Set(drafts.map((d) => d.draftId)).size).toBe(1);
    for (let i = 1; i < drafts.length; i++) expect(drafts[i]!.text.length).toBeGreaterThan(drafts[i - 1]!.text.length);
    const answers = h.tg.sent.filter((m) => m.chatId === chat && !m.silent);
    expect(answers.map((m) => m.text)).toEqual([`Summary\n\n${ANSWER}`]);
    expect(answers[0]!.parseMode).toBe('HTML');
    // Posted as its placeholder, then edited into the answer once: never a draft turned into a message by edits.
    expect(answers[0]!.edits).toBe(1);
  });
});
