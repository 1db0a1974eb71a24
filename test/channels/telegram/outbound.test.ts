import { memoryLedger } from '../../../src/delivery/pieces.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Api } from 'grammy';
import { pino } from 'pino';
import { createLogger } from '../../../src/log.js';
import { parseEnv } from '../../../src/config/load.js';
import { deriveConfig } from '../../../src/config/config.js';
import { telegramModule } from '../../../src/channels/telegram/module.js';
import { TelegramOutbound } from '../../../src/channels/telegram/outbound.js';
import type { InboundMessage } from '../../../src/channels/types.js';
import { startFakeTelegram, parseTelegramHtml, TOKEN, type FakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers/processes.js';

const GROUP_ID = -100777;

function to(fields: Partial<InboundMessage> = {}): InboundMessage {
  return {
    v: 1,
    id: 'm1',
    platform: 'telegram',
    conversation: String(GROUP_ID),
    sender: { id: '42' },
    text: 'q',
    attachments: [],
    eventId: `${GROUP_ID}:5`,
    receivedAt: 0,
    replyTo: '5',
    meta: { chatType: 'supergroup' },
    ...fields,
  };
}

describe('telegram outbound against a fake Bot API', () => {
  let fake: FakeTelegram;
  let out: TelegramOutbound;
  beforeEach(async () => {
    fake = await startFakeTelegram();
    out = new TelegramOutbound(new Api(TOKEN, { apiRoot: fake.apiRoot }), { token: TOKEN, apiRoot: fake.apiRoot, log: createLogger('silent') });
  });
  afterEach(async () => {
    await fake.close();
  });

  it('a 9,000-character answer arrives as three ordered messages of valid HTML, the first replying to the request', async () => {
    const paragraphs = Array.from({ length: 60 }, (_, i) => `**Part ${String(i).padStart(2, '0')}** — ${'lorem ipsum '.repeat(11).trim()} <x> & y.`);
    const answer = paragraphs.join('\n\n');
    expect(answer.length).toBeGreaterThan(9000);
    expect(answer.length).toBeLessThan(12000);

    const ids = await out.post(to(), answer, 'answer');

    const sends = fake.callsOf('sendMessage');
    expect(sends).toHaveLength(3);
    expect(ids).toEqual(fake.sent.map((m) => String(m.messageId)));
    expect(sends.map((c) => c.body.parse_mode)).toEqual(['HTML', 'HTML', 'HTML']);
    for (const call of sends) {
      const parsed = parseTelegramHtml(call.body.text);
      expect(parsed).not.toHaveProperty('error');
      expect((parsed as { text: string }).text.length).toBeLessThanOrEqual(4096);
    }
    // In order, nothing lost or repeated: every part appears once, ascending across the messages.
    const parts = fake.sent.flatMap((m) => [...m.text.matchAll(/Part (\d\d)/g)].map((x) => Number(x[1])));
    expect(parts).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(fake.sent[0]!.text).toContain('Part 00 — lorem ipsum');
    expect(fake.sent[0]!.text).toContain('<x> & y.');
    expect(sends.map((c) => c.body.reply_parameters?.message_id)).toEqual([5, undefined, undefined]);
  });

  it('in a DM the answer is a plain post (no reply); in a forum topic it goes to the topic', async () => {
    await out.post(to({ conversation: '42', meta: { chatType: 'private' } }), 'hello', 'answer');
    await out.post(to({ thread: '99' }), 'in topic', 'answer');
    const [dm, topic] = fake.callsOf('sendMessage');
    expect(dm!.body).toMatchObject({ chat_id: 42, text: 'hello', parse_mode: 'HTML' });
    expect(dm!.body.reply_parameters).toBeUndefined();
    expect(topic!.body).toMatchObject({ chat_id: GROUP_ID, message_thread_id: 99, reply_parameters: { message_id: 5, allow_sending_without_reply: true } });
  });

  it('falls back to plain text when Telegram refuses the entities, posting the piece once', async () => {
    fake.fault({ method: 'sendMessage', when: (b) => b.parse_mode === 'HTML', status: 400, description: 'Bad Request: can\'t parse entities: Unsupported start tag "foo" at byte offset 3' });
    const ids = await out.post(to(), 'Use **bold** and `code`.', 'answer');
    const sends = fake.callsOf('sendMessage');
    expect(sends.map((c) => [c.body.parse_mode, c.error])).toEqual([
      ['HTML', 400],
      [undefined, undefined],
    ]);
    expect(fake.sent.map((m) => m.text)).toEqual(['Use **bold** and `code`.']);
    expect(ids).toEqual([String(fake.sent[0]!.messageId)]);
  });

  it('honours 429 retry_after on sendMessage and posts exactly once', async () => {
    fake.fault({ method: 'sendMessage', status: 429, description: 'Too Many Requests: retry after 1', parameters: { retry_after: 1 } });
    await out.post(to(), 'final answer', 'answer');
    const sends = fake.callsOf('sendMessage');
    expect(sends.map((c) => c.error)).toEqual([429, undefined]);
    expect(sends[1]!.at - sends[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(fake.sent.map((m) => m.text)).toEqual(['final answer']);
  });

  it('never repeats a sendMessage whose response was lost (it may have been posted): the ledger records it as unknown', async () => {
    fake.fault({ method: 'sendMessage', status: 200, description: '', drop: true });
    const ledger = memoryLedger();
    expect(await out.post(to(), 'once only', 'answer', ledger)).toEqual([]);
    expect(ledger.state(0)).toBe('unknown');
    // Delivering the reply again (another attempt, another worker) does not post it again either.
    expect(await out.post(to(), 'once only', 'answer', ledger)).toEqual([]);
    expect(fake.callsOf('sendMessage')).toHaveLength(1);
    expect(fake.sent.map((m) => m.text)).toEqual(['once only']);
  });

  it('a reply to a chat that blocked the bot is a refusal for good (403), not worth retrying', async () => {
    fake.fault({ method: 'sendMessage', status: 403, description: 'Forbidden: bot was blocked by the user' });
    const err = await out.post(to(), 'hello?', 'answer').catch((e: unknown) => e);
    expect(out.classifyWriteError(err)).toBe('refused');
    fake.fault({ method: 'sendMessage', status: 400, description: 'Bad Request: chat not found' });
    expect(out.classifyWriteError(await out.post(to(), 'hello?', 'answer').catch((e: unknown) => e))).toBe('refused');
  });

  it('status: a silent plain-text post, edits in place, "not modified" is success, removal deletes it', async () => {
    const [id] = await out.post(to(), 'Let me look <at> **this**', 'status');
    const post = fake.callsOf('sendMessage')[0]!;
    expect(post.body).toMatchObject({ text: 'Let me look <at> **this**', disable_notification: true });
    expect(post.body.parse_mode).toBeUndefined();
    await out.edit(to(), id!, 'Let me look <at> **this**\n• read a.txt');
    await new Promise((r) => setTimeout(r, 1050));
    await out.edit(to(), id!, 'Let me look <at> **this**\n• read a.txt');
    expect(fake.callsOf('editMessageText').map((c) => c.error)).toEqual([undefined, 400]);
    expect(fake.sent[0]!.text).toBe('Let me look <at> **this**\n• read a.txt');
    await out.remove(to(), id!);
    expect(fake.sent[0]!.deleted).toBe(true);
    await out.remove(to(), id!); // already gone: still fine
  });

  it('429 on editMessageText defers the edit past retry_after with the newest text, without blocking', async () => {
    const [id] = await out.post(to(), 'step 1', 'status');
    fake.fault({ method: 'editMessageText', status: 429, description: 'Too Many Requests: retry after 1', parameters: { retry_after: 1 } });
    await out.edit(to(), id!, 'step 1\nstep 2');
    const limited = fake.callsOf('editMessageText')[0]!;
    expect(limited.error).toBe(429);
    await out.edit(to(), id!, 'step 1\nstep 2\nstep 3'); // during the wait: deferred, returns at once
    expect(fake.callsOf('editMessageText')).toHaveLength(1);
    await waitFor('the deferred edit', () => fake.callsOf('editMessageText').length === 2, 5_000);
    const applied = fake.callsOf('editMessageText')[1]!;
    expect(applied.at - limited.at).toBeGreaterThanOrEqual(1000);
    expect(applied.body.text).toBe('step 1\nstep 2\nstep 3');
    expect(fake.sent[0]!.text).toBe('step 1\nstep 2\nstep 3');
  });

  it('a post waits for the chat’s flood wait to end instead of hitting 429 again', async () => {
    const [id] = await out.post(to(), 'working', 'status');
    fake.fault({ method: 'editMessageText', status: 429, description: 'Too Many Requests: retry after 1', parameters: { retry_after: 1 } });
    await out.edit(to(), id!, 'working more');
    const limitedAt = fake.callsOf('editMessageText')[0]!.at;
    await out.remove(to(), id!); // cancels the deferred edit
    await out.post(to(), 'the answer', 'answer');
    const answer = fake.callsOf('sendMessage')[1]!;
    expect(answer.at - limitedAt).toBeGreaterThanOrEqual(1000);
    expect(answer.error).toBeUndefined();
    await new Promise((r) => setTimeout(r, 100));
    expect(fake.callsOf('editMessageText')).toHaveLength(1);
  });

  it('typing sends a chat action to the topic', async () => {
    await out.typing(to({ thread: '12' }));
    expect(fake.callsOf('sendChatAction')[0]!.body).toEqual({ chat_id: GROUP_ID, action: 'typing', message_thread_id: 12 });
  });

  it('downloads a file by file_id within the cap, and refuses one over it', async () => {
    const bytes = new TextEncoder().encode('hello, workspace');
    fake.addFile({ fileId: 'DOC', bytes });
    const got = await out.download({ name: 'a.txt', ref: 'DOC' }, 1000, new AbortController().signal);
    expect(new TextDecoder().decode(got)).toBe('hello, workspace');
    await expect(out.download({ name: 'a.txt', ref: 'DOC' }, 5, new AbortController().signal)).rejects.toThrow('larger than the 5 bytes limit');
    fake.addFile({ fileId: 'HUGE', bytes: new Uint8Array(1), size: 30 * 1024 * 1024 });
    await expect(out.download({ name: 'b.bin', ref: 'HUGE' }, 50_000_000, new AbortController().signal)).rejects.toThrow('larger than the 20 MB limit');
  });

  it('a wrong token fails clearly and the error does not carry the token', async () => {
    const bad = new TelegramOutbound(new Api('1:wrong', { apiRoot: fake.apiRoot }), { token: '1:wrong', apiRoot: fake.apiRoot, log: createLogger('silent') });
    const err = (await bad.post(to(), 'x', 'answer').catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toContain('401: Unauthorized');
    expect(err.message).not.toContain('wrong');
  });
});

describe('telegram outbound built by the module', () => {
  it('a network failure never puts the bot token into a logged error', async () => {
    const config = deriveConfig(parseEnv({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: 'http://127.0.0.1:9' }));
    const adapter = telegramModule.outbound({ config, log: createLogger('silent') });
    const err = await adapter.typing!(to()).catch((e: unknown) => e);
    const lines: string[] = [];
    pino({}, { write: (s: string) => void lines.push(s) }).warn({ err }, 'typing indicator failed');
    expect(lines[0]).toContain('ECONNREFUSED');
    expect(lines[0]).toContain("Network request for 'sendChatAction' failed!");
    expect(lines[0]).not.toContain(TOKEN.split(':')[1]);
  });
});
