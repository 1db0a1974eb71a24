import { crc32, deflateSync } from 'node:zlib';
import { memoryLedger, MAY_REPEAT_NOTE } from '../../../src/channels/kit/pieces.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Api, GrammyError } from 'grammy';
import { lookup } from 'mime-types';
import { pino } from 'pino';
import { createLogger } from '../../../src/log.js';
import { parseEnv } from '../../../src/config/load.js';
import { deriveConfig } from '../../../src/config/config.js';
import { telegramModule } from '../../../src/channels/telegram/module.js';
import { GROUP_CHAT_GAP_MS, TelegramOutbound, UPLOAD_MAX_BYTES } from '../../../src/channels/telegram/outbound.js';
import type { InboundMessage, OutgoingFile } from '../../../src/channels/types.js';
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

/** A post and an edit of one chat share its budget: waits until an edit after a post goes at once. */
const pastTheGap = () => new Promise((r) => setTimeout(r, GROUP_CHAT_GAP_MS + 50));

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
    fake.fault({
      method: 'sendMessage',
      when: (b) => b.parse_mode === 'HTML',
      status: 400,
      description: 'Bad Request: can\'t parse entities: Unsupported start tag "foo" at byte offset 3',
    });
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

  it('a sendMessage whose response was lost (it may have been posted) is never left as silence: sent again at once, with the may-repeat note', async () => {
    fake.fault({ method: 'sendMessage', status: 200, description: '', drop: true });
    const ledger = memoryLedger();
    const ids = await out.post(to(), 'once only', 'answer', ledger);
    expect(ids).toHaveLength(1);
    expect(ledger.state(0)).toEqual({ posted: ids[0] });
    // Delivering the reply again (another attempt, another worker) posts nothing more.
    expect(await out.post(to(), 'once only', 'answer', ledger)).toEqual(ids);
    expect(fake.callsOf('sendMessage')).toHaveLength(2);
    expect(fake.sent.map((m) => m.text)).toEqual(['once only', `${MAY_REPEAT_NOTE}once only`]);
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
    // The post took the chat's turn: an edit now would be deferred to the gap.
    await pastTheGap();
    await out.edit(to(), id!, 'Let me look <at> **this**\n• read a.txt');
    await new Promise((r) => setTimeout(r, GROUP_CHAT_GAP_MS + 50));
    await out.edit(to(), id!, 'Let me look <at> **this**\n• read a.txt');
    expect(fake.callsOf('editMessageText').map((c) => c.error)).toEqual([undefined, 400]);
    expect(fake.sent[0]!.text).toBe('Let me look <at> **this**\n• read a.txt');
    await out.remove(to(), id!);
    expect(fake.sent[0]!.deleted).toBe(true);
    await out.remove(to(), id!); // already gone: still fine
  });

  it('429 on editMessageText defers the edit past retry_after with the newest text, without blocking', async () => {
    const [id] = await out.post(to(), 'step 1', 'status');
    await pastTheGap();
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
    await pastTheGap();
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
    await expect(out.download({ name: 'a.txt', ref: 'DOC' }, 5, new AbortController().signal)).rejects.toThrow('larger than the 5 B limit');
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

/** A file as the send_file tool hands it over (the bytes come from `read`, as from the workspace). */
function outgoing(name: string, bytes: Uint8Array, caption?: string): OutgoingFile {
  return {
    name,
    path: name,
    absolutePath: `/workspace/${name}`,
    size: bytes.byteLength,
    mime: lookup(name) || 'application/octet-stream',
    ...(caption !== undefined && { caption }),
    read: async () => bytes,
  };
}

/** A real PNG of width × height grey pixels. */
function png(width: number, height: number): Uint8Array {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows = Buffer.concat(Array.from({ length: height }, () => Buffer.from([0, ...Array.from({ length: width }, () => [128, 128, 128]).flat()])));
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk('IHDR', header),
      chunk('IDAT', deflateSync(rows)),
      chunk('IEND', Buffer.alloc(0)),
    ]),
  );
}

describe('telegram outbound: send_file uploads (multipart, real grammY against the fake)', () => {
  let fake: FakeTelegram;
  let out: TelegramOutbound;
  const signal = new AbortController().signal;
  beforeEach(async () => {
    fake = await startFakeTelegram();
    out = new TelegramOutbound(new Api(TOKEN, { apiRoot: fake.apiRoot }), { token: TOKEN, apiRoot: fake.apiRoot, log: createLogger('silent') });
  });
  afterEach(async () => {
    await fake.close();
  });

  it('a document arrives with its bytes, name and plain-text caption, replying to the request in its forum topic', async () => {
    const bytes = new TextEncoder().encode('quarter,revenue\nQ3,1200\n');
    const id = await out.upload(to({ thread: '99' }), outgoing('report.csv', bytes, 'Q3 <numbers> & **notes**'), signal);

    const [call] = fake.callsOf('sendDocument');
    expect(call!.body).toMatchObject({
      chat_id: GROUP_ID,
      message_thread_id: 99,
      reply_parameters: { message_id: 5, allow_sending_without_reply: true },
      caption: 'Q3 <numbers> & **notes**',
    });
    expect(call!.body.parse_mode).toBeUndefined();
    const [message] = fake.sent;
    expect(id).toBe(String(message!.messageId));
    expect(message).toMatchObject({ chatId: GROUP_ID, threadId: 99, replyTo: 5, text: 'Q3 <numbers> & **notes**' });
    expect(message!.file).toMatchObject({ kind: 'document', name: 'report.csv', mime: 'text/csv', caption: 'Q3 <numbers> & **notes**' });
    expect(Buffer.from(message!.file!.bytes).equals(Buffer.from(bytes))).toBe(true);
  });

  it('in a DM it is a plain post; a name that would break the multipart header is made safe', async () => {
    await out.upload(to({ conversation: '42', meta: { chatType: 'private' } }), outgoing('odd "name";\nx.txt', new TextEncoder().encode('x')), signal);
    const [call] = fake.callsOf('sendDocument');
    expect(call!.body.chat_id).toBe(42);
    expect(call!.body.reply_parameters).toBeUndefined();
    expect(call!.body.caption).toBeUndefined();
    expect(fake.sent[0]!.file!.name).toBe('odd _name___x.txt');
  });

  it('a small PNG goes as a photo; one sendPhoto refuses for its shape, or one over 10 MB, goes as a document; each arrives once', async () => {
    const small = png(4, 3);
    await out.upload(to(), outgoing('chart.png', small, 'the chart'), signal);
    expect(fake.callsOf('sendPhoto').map((c) => c.error)).toEqual([undefined]);
    expect(fake.sent[0]!.file).toMatchObject({ kind: 'photo', name: 'chart.png', caption: 'the chart' });
    expect(Buffer.from(fake.sent[0]!.file!.bytes).equals(Buffer.from(small))).toBe(true);

    const strip = png(1, 40); // a ratio of 40: Telegram's PHOTO_INVALID_DIMENSIONS
    await out.upload(to(), outgoing('strip.png', strip), signal);
    expect(fake.callsOf('sendPhoto').map((c) => c.error)).toEqual([undefined, 400]);
    expect(fake.callsOf('sendDocument').map((c) => c.error)).toEqual([undefined]);

    const large = new Uint8Array(10_000_001);
    large.set(png(1, 1));
    await out.upload(to(), outgoing('huge.png', large), signal);
    expect(fake.callsOf('sendPhoto')).toHaveLength(2);
    expect(fake.callsOf('sendDocument').map((c) => c.error)).toEqual([undefined, undefined]);
    expect(fake.sent.map((m) => [m.file!.kind, m.file!.name])).toEqual([
      ['photo', 'chart.png'],
      ['document', 'strip.png'],
      ['document', 'huge.png'],
    ]);
  });

  it('honours 429 retry_after on sendDocument: the file arrives once, after the wait', async () => {
    fake.fault({ method: 'sendDocument', status: 429, description: 'Too Many Requests: retry after 1', parameters: { retry_after: 1 } });
    await out.upload(to(), outgoing('notes.txt', new TextEncoder().encode('notes')), signal);
    const sends = fake.callsOf('sendDocument');
    expect(sends.map((c) => c.error)).toEqual([429, undefined]);
    expect(sends[1]!.at - sends[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(fake.sent.filter((m) => m.file)).toHaveLength(1);
  });

  it('a file over 50 MB gets 413 Request Entity Too Large, and a chat that forbids files refuses: both are refusals for good', async () => {
    const err = await out.upload(to(), outgoing('big.bin', new Uint8Array(UPLOAD_MAX_BYTES + 1)), signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GrammyError);
    expect((err as GrammyError).error_code).toBe(413);
    expect(out.classifyWriteError(err)).toBe('refused');

    fake.fault({ method: 'sendDocument', status: 400, description: 'Bad Request: not enough rights to send documents to the chat' });
    const denied = await out.upload(to(), outgoing('a.txt', new TextEncoder().encode('a')), signal).catch((e: unknown) => e);
    expect(out.classifyWriteError(denied)).toBe('refused');
    expect(fake.callsOf('sendDocument')).toHaveLength(2);
    expect(fake.sent).toEqual([]);
  });

  it('never repeats an upload whose response was lost (it may have arrived): the outcome is unknown', async () => {
    fake.fault({ method: 'sendDocument', status: 200, description: '', drop: true });
    const err = await out.upload(to(), outgoing('once.txt', new TextEncoder().encode('once')), signal).catch((e: unknown) => e);
    expect(out.classifyWriteError(err)).toBe('unknown');
    expect(fake.callsOf('sendDocument')).toHaveLength(1);
    expect(fake.sent.map((m) => m.file?.name)).toEqual(['once.txt']);
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
