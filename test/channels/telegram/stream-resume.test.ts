import { setTimeout as sleep } from 'node:timers/promises';
import { Api } from 'grammy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../../src/channels/types.js';
import { TelegramOutbound, PRIVATE_CHAT_GAP_MS } from '../../../src/channels/telegram/outbound.js';
import { AnswerStream } from '../../../src/run/delivery/answer-stream.js';
import type { StreamEntry } from '../../../src/session/journal.js';
import { memoryLedger } from '../../../src/channels/kit/pieces.js';
import { createLogger } from '../../../src/log.js';
import { startFakeTelegram, TOKEN, type FakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers/processes.js';

const TEXT = 'A streamed answer that is long enough to be shown while it is written, in more than one write. '.repeat(3);

const to = (chat: number): InboundMessage => ({
  v: 1,
  id: `m${chat}`,
  platform: 'telegram',
  conversation: String(chat),
  sender: { id: String(chat) },
  text: 'q',
  attachments: [],
  eventId: `${chat}:1`,
  receivedAt: 0,
  replyTo: '1',
});

describe('a streamed answer across runs of one turn (the real Telegram outbound against the fake Bot API)', () => {
  let fake: FakeTelegram;
  const log = createLogger('silent');
  const outbound = () => new TelegramOutbound(new Api(TOKEN, { apiRoot: fake.apiRoot }), { token: TOKEN, apiRoot: fake.apiRoot, log });
  beforeAll(async () => {
    fake = await startFakeTelegram();
  });
  afterAll(async () => {
    await fake.close();
  });

  it('a run that takes the turn over continues the messages the journal names: no second message, the final text once', async () => {
    const chat = 5201;
    const journal: StreamEntry[] = [];
    const first = new AnswerStream(outbound(), to(chat), log, async (e) => void journal.push(e), undefined);
    first.onEvent({ type: 'answer_text', step: 1, text: TEXT.slice(0, 120) });
    await waitFor('the first write', () => fake.sent.some((m) => m.chatId === chat));
    // The worker dies here: the stream stops where it was.
    await first.stop();
    expect(journal).toEqual([{ step: 1, shown: { ids: [String(fake.sent.find((m) => m.chatId === chat)!.messageId)], texts: [`${TEXT.slice(0, 120)} …`] } }]);

    // The next run replays steps before 1 and calls the model for step 1 again: its text streams into the same message.
    const second = new AnswerStream(outbound(), to(chat), log, async (e) => void journal.push(e), journal.at(-1));
    second.onEvent({ type: 'answer_text', step: 1, text: TEXT.slice(0, 200) });
    second.onEvent({ type: 'answer_text', step: 1, text: TEXT });
    await waitFor('the second run’s edit', () => fake.callsOf('editMessageText').some((c) => Number(c.body.chat_id) === chat), 5_000);
    await sleep(PRIVATE_CHAT_GAP_MS + 200);
    await second.stop();
    const streamed = second.answer({
      state: 'completed',
      steps: 1,
      modelCalls: 1,
      toolCalls: 0,
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
      transcript: [],
      answer: TEXT.trim(),
    });
    expect(streamed?.shown.ids).toEqual(journal[0]!.shown.ids);

    // The committed reply finishes those messages; delivered again with the same ledger (a crash mid-delivery), nothing more is posted.
    const ledger = memoryLedger();
    const out = outbound();
    const ids = await out.finishStream(to(chat), streamed!.shown, TEXT.trim(), ledger);
    await out.finishStream(to(chat), streamed!.shown, TEXT.trim(), ledger);
    expect(ids).toEqual(journal[0]!.shown.ids);
    const messages = fake.sent.filter((m) => m.chatId === chat);
    expect(messages.map((m) => m.text)).toEqual([TEXT.trim()]);
    expect(fake.callsOf('sendMessage').filter((c) => Number(c.body.chat_id) === chat)).toHaveLength(1);
  });

  it('a step that goes on to tools keeps its text as a message of its own; its narration is not shown again; the next step streams anew', async () => {
    const chat = 5202;
    const journal: StreamEntry[] = [];
    const stream = new AnswerStream(outbound(), to(chat), log, async (e) => void journal.push(e), undefined);
    expect(stream.onEvent({ type: 'answer_text', step: 1, text: TEXT })).toBe(false);
    // Journaled once the platform answered with the message id (the fake records the send before it answers).
    await waitFor('the first write', () => fake.sent.some((m) => m.chatId === chat) && journal.length > 0);
    // Its narration is already on screen: the caller must not put it on the status line.
    expect(stream.onEvent({ type: 'narration', step: 1, text: TEXT })).toBe(true);
    stream.onEvent({ type: 'answer_text', step: 2, text: `Here is the result. ${TEXT}` });
    await waitFor('the second message', () => fake.sent.filter((m) => m.chatId === chat).length === 2, 10_000);
    // A short text is not streamed (most narration is short): it goes to the status line as before.
    expect(stream.onEvent({ type: 'answer_text', step: 3, text: 'Let me check.' })).toBe(false);
    expect(stream.onEvent({ type: 'narration', step: 3, text: 'Let me check.' })).toBe(false);
    await sleep(PRIVATE_CHAT_GAP_MS + 200);
    await stream.stop();
    expect(fake.sent.filter((m) => m.chatId === chat)).toHaveLength(2);
    const [interim] = fake.sent.filter((m) => m.chatId === chat);
    expect(interim!.text).toBe(TEXT.trim());
    expect(journal.filter((e) => e.interim).map((e) => e.step)).toEqual([1, 2]);
  });
});
