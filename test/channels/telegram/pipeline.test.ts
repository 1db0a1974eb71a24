import { readyz } from '../../helpers/stack.js';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { workspaceFolderName } from '../../../src/tools/workspace.js';
import { parseTelegramHtml } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers/processes.js';
import { ADA, BOT_FROM, TelegramHarness } from './harness.js';
import { BOT_USERNAME } from '../../fakes/telegram-server.js';

const lastUser = (messages: ChatMessage[]) => String([...messages].reverse().find((m) => m.role === 'user')?.content ?? '');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('telegram channel: updates → queue → agent → Telegram, through the real roles', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-pipe');
    // Unscripted turns are answered "ack: <the turn's last user text>".
    h.stack.fake.setHandler((req) => ({ content: `ack: ${lastUser(req.body.messages as ChatMessage[])}` }));
  });
  afterAll(async () => {
    await h?.close();
  });

  it('registers the commands at start-up', () => {
    expect(h.tg.commands.map((c) => c.command)).toEqual(['ask', 'help', 'reset', 'stop', 'status', 'agent', 'memory', 'forget', 'schedules', 'unschedule']);
  });

  it('a DM: typing, one status message edited with the narration, the final reply as a new message, the status removed', async () => {
    const chat = 1001;
    h.stack.fake.script([
      { content: 'Let me list the files first.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }] },
      { content: 'Now I will write a summary.', toolCalls: [{ name: 'write_file', arguments: '{"path":"summary.md","content":"# Summary"}' }], delayMs: 1300 },
      { content: 'Done: I wrote **summary.md** for you.', delayMs: 1300 },
    ]);
    h.dm(chat, 'please summarise the workspace');
    await waitFor('the answer', () => h.answers(chat).length === 1, 20_000);

    const calls = h.callsFor(chat);
    const status = calls.find((c) => c.method === 'sendMessage' && c.body.disable_notification === true)!;
    const answer = h.answers(chat)[0]!;
    expect(status.body.text).toBe('Let me list the files first.');
    expect(status.body.parse_mode).toBeUndefined();
    // Typing came first, the status was edited in place with the newer lines, then the answer.
    const typing = calls.filter((c) => c.method === 'sendChatAction');
    expect(typing[0]!.body.action).toBe('typing');
    expect(calls.indexOf(typing[0]!)).toBeLessThan(calls.indexOf(status));
    const statusMessage = h.tg.sent.filter((m) => m.chatId === chat)[0]!;
    const edits = calls.filter((c) => c.method === 'editMessageText' && c.error === undefined);
    const statusEdits = edits.filter((e) => e.body.message_id === statusMessage.messageId);
    expect(statusEdits.length).toBeGreaterThanOrEqual(1);
    expect(statusEdits.at(-1)!.body.text).toContain('Now I will write a summary.');
    // The only other edit fills the answer's placeholder (the answer message itself).
    expect(edits.filter((e) => e.body.message_id !== statusMessage.messageId).map((e) => e.body.message_id)).toEqual([answer.messageId]);
    expect(answer.body).toMatchObject({ text: 'Done: I wrote <b>summary.md</b> for you.', parse_mode: 'HTML' });
    expect(answer.body.reply_parameters).toBeUndefined();
    await waitFor('the status message removed', () => h.callsFor(chat).some((c) => c.method === 'deleteMessage'));
    expect(statusMessage.deleted).toBe(true);
    // Typing stopped with the run: no chat action after the answer.
    await sleep(200);
    const after = h.callsFor(chat);
    expect(after.filter((c) => c.method === 'sendChatAction' && c.at >= answer.at)).toEqual([]);
  });

  it('a group: no mention → no run; @mention, a reply to the bot and /ask@bot → one run each, answered as replies', async () => {
    const chat = -100_2001;
    const before = h.stack.fake.requests.length;
    const ignored = h.group(chat, 'lunch at noon?');
    const text = `@${BOT_USERNAME} what is the plan?`;
    const mention = h.group(chat, text, { entities: [{ type: 'mention', offset: 0, length: BOT_USERNAME.length + 1 }] });
    await waitFor('the mention answered', () => h.answers(chat).length === 1);
    const botMessage = h.tg.sent.find((m) => m.chatId === chat && m.text === 'ack: what is the plan?')!;
    const reply = h.group(chat, 'and after that?', {
      reply_to_message: { message_id: botMessage.messageId, from: BOT_FROM, chat: { id: chat, type: 'supergroup' }, date: 1, text: botMessage.text },
    });
    await waitFor('the reply answered', () => h.answers(chat).length === 2);
    const ask = h.group(chat, `/ask@${BOT_USERNAME} summarise`, { entities: [{ type: 'bot_command', offset: 0, length: 5 + BOT_USERNAME.length }] });
    await waitFor('the /ask answered', () => h.answers(chat).length === 3);

    expect(
      h
        .userTexts()
        .slice(before)
        .map((turn) => turn.at(-1)),
    ).toEqual(['what is the plan?', 'and after that?', 'summarise']);
    const answers = h.answers(chat);
    expect(answers.map((a) => a.body.text)).toEqual(['ack: what is the plan?', 'ack: and after that?', 'ack: summarise']);
    expect(answers.map((a) => a.body.reply_parameters?.message_id)).toEqual([mention.messageId, reply.messageId, ask.messageId]);
    expect(JSON.stringify(h.stack.fake.requests.slice(before).map((r) => r.body))).not.toContain('lunch at noon');
    expect(ignored.updateId).toBeLessThan(mention.updateId);
  });

  it('a burst of three DMs is answered in order, one run at a time', async () => {
    const chat = 1003;
    let inflight = 0;
    let maxInflight = 0;
    const before = h.stack.fake.requests.length;
    h.stack.fake.setHandler(async (req) => {
      inflight += 1;
      maxInflight = Math.max(maxInflight, inflight);
      await sleep(300);
      inflight -= 1;
      const users = (req.body.messages as ChatMessage[]).filter((m) => m.role === 'user').map((m) => String(m.content));
      return { content: `ack: ${users.at(-1)}` };
    });
    try {
      h.dm(chat, 'first');
      h.dm(chat, 'second');
      h.dm(chat, 'third');
      await waitFor('every message answered', () => h.answers(chat).some((a) => a.body.text === 'ack: third'), 20_000);
    } finally {
      h.stack.fake.setHandler((req) => ({ content: `ack: ${lastUser(req.body.messages as ChatMessage[])}` }));
    }
    expect(maxInflight).toBe(1);
    // Each turn's request carries the earlier turns (history): a turn started only after the previous one ended.
    const turns = h.stack.fake.requests.slice(before).map((r) => r.body.messages as ChatMessage[]);
    const said = turns.map((m) => m.filter((x) => x.role === 'user').map((x) => String(x.content)));
    expect(said.at(-1)!.join('|')).toMatch(/first.*second.*third/);
    for (let i = 1; i < turns.length; i++) expect(turns[i]!.some((m) => m.role === 'assistant' && String(m.content).startsWith('ack:'))).toBe(true);
    // One answer per turn, posted in turn order (folded messages share a turn), the last answering "third".
    const order = ['first', 'second', 'third'];
    const answered = h.answers(chat).map((a) => order.indexOf(String(a.body.text).replace('ack: ', '')));
    expect(answered).toHaveLength(turns.length);
    expect(answered).toEqual(turns.map((t) => order.indexOf(lastUser(t))));
    expect(answered.at(-1)).toBe(2);
    expect([...answered].sort()).toEqual(answered);
  });

  it('a 9,000-character answer arrives as three ordered messages of valid HTML', async () => {
    const chat = 1004;
    const answer = Array.from({ length: 47 }, (_, i) => `Section ${String(i).padStart(2, '0')}: ${'data & <more> '.repeat(13).trim()}`).join('\n\n');
    expect(answer.length).toBeGreaterThanOrEqual(9000);
    h.stack.fake.script([{ content: answer }]);
    h.dm(chat, 'the long report please');
    await waitFor('three pieces', () => h.answers(chat).length === 3, 20_000);
    await sleep(200);
    const pieces = h.answers(chat);
    expect(pieces).toHaveLength(3);
    const visible = pieces.map((p) => parseTelegramHtml(p.body.text));
    for (const v of visible) expect(v).not.toHaveProperty('error');
    const sections = visible.flatMap((v) => [...(v as { text: string }).text.matchAll(/Section (\d\d)/g)].map((m) => Number(m[1])));
    expect(sections).toEqual(Array.from({ length: 47 }, (_, i) => i));
  });

  it('an answer whose entities Telegram rejects arrives as plain text, once', async () => {
    const chat = 1005;
    // The answer is edited into its placeholder, so the edit is what Telegram refuses.
    for (const method of ['sendMessage', 'editMessageText'])
      h.tg.fault({
        method,
        when: (b) => b.chat_id === chat && b.parse_mode === 'HTML',
        status: 400,
        description: 'Bad Request: can\'t parse entities: Can\'t find end tag corresponding to start tag "b"',
      });
    h.stack.fake.script([{ content: 'Here is **the** answer.' }]);
    h.dm(chat, 'format me');
    await waitFor('the plain answer', () => h.answers(chat).length === 1);
    expect(h.answers(chat)[0]!.body).toEqual({ chat_id: chat, text: 'Here is **the** answer.', link_preview_options: { is_disabled: true } });
    expect(h.tg.sent.filter((m) => m.chatId === chat && m.text.includes('answer'))).toHaveLength(1);
  });

  it('429 on editMessageText delays the edits, and the final reply still arrives exactly once', async () => {
    const chat = 1006;
    h.tg.fault({
      method: 'editMessageText',
      when: (b) => b.chat_id === chat,
      status: 429,
      description: 'Too Many Requests: retry after 2',
      parameters: { retry_after: 2 },
    });
    h.stack.fake.script([
      { content: 'Step one.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }] },
      { content: 'Step two.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }], delayMs: 1200 },
      { content: 'Step three.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }], delayMs: 1200 },
      { content: 'All done.', delayMs: 1200 },
    ]);
    h.dm(chat, 'work slowly');
    await waitFor('the answer', () => h.answers(chat).length === 1, 20_000);
    await sleep(300);
    const edits = h.callsFor(chat).filter((c) => c.method === 'editMessageText');
    const limited = edits.find((e) => e.error === 429)!;
    expect(limited).toBeDefined();
    for (const e of edits.filter((x) => x.at > limited.at)) expect(e.at - limited.at).toBeGreaterThanOrEqual(2000);
    const answers = h.answers(chat);
    expect(answers.map((a) => a.body.text)).toEqual(['All done.']);
    expect(answers[0]!.at - limited.at).toBeGreaterThanOrEqual(2000);
  });

  it('an update delivered twice (same update_id, e.g. after a lost confirmation) runs once', async () => {
    const chat = 1007;
    const before = h.stack.fake.requests.length;
    const update = h.dmUpdate(chat, 'only once please');
    const id = h.tg.pushUpdate(update);
    await waitFor('the answer', () => h.answers(chat).length === 1);
    h.tg.pushUpdate({ ...update, update_id: id }, { redeliver: true });
    await waitFor('the redelivery polled', () => h.tg.callsOf('getUpdates').some((c) => (c.answeredAt ?? 0) > h.answers(chat)[0]!.at));
    await sleep(500);
    expect(h.answers(chat)).toHaveLength(1);
    expect(
      h
        .userTexts()
        .slice(before)
        .filter((t) => t.at(-1) === 'only once please'),
    ).toHaveLength(1);
  });

  it('an edited message does not start a second run', async () => {
    const chat = 1008;
    const update = h.dmUpdate(chat, 'original');
    h.tg.pushUpdate(update);
    await waitFor('the answer', () => h.answers(chat).length === 1);
    h.tg.pushUpdate({ edited_message: { ...update.message, text: 'edited', edit_date: Math.floor(Date.now() / 1000) } });
    h.dm(chat, 'next');
    await waitFor('the next answer', () => h.answers(chat).length === 2);
    expect(h.answers(chat).map((a) => a.body.text)).toEqual(['ack: original', 'ack: next']);
  });

  it('/stop cancels a run waiting on a slow model; the user hears it stopped', async () => {
    const chat = 1009;
    const before = h.stack.fake.requests.length;
    h.stack.fake.script([{ content: 'too late', delayMs: 30_000 }]);
    h.dm(chat, 'take your time');
    await waitFor('the model call', () => h.stack.fake.requests.length > before);
    h.dm(chat, '/stop', { entities: [{ type: 'bot_command', offset: 0, length: 5 }] });
    await waitFor('the stop reply and the honest line', () => h.answers(chat).length === 2, 20_000);
    expect(
      h
        .answers(chat)
        .map((a) => a.body.text)
        .sort(),
    ).toEqual(['Stopped.', 'Stopping the current run…']);
    // The job is marked failed just after the honest line is delivered.
    await waitFor('the cancelled job', async () => (await h.stack.queue.getJobs(['failed'])).find((j) => j.data.session === `telegram:${chat}`));
    const [job] = (await h.stack.queue.getJobs(['failed'])).filter((j) => j.data.session === `telegram:${chat}`);
    expect(job!.failedReason).toMatch(/^cancelled: cancelled/);
    expect(h.answers(chat).some((a) => a.body.text === 'too late')).toBe(false);
  });

  it('/status, /help and /start answer at once; /reset starts a fresh conversation', async () => {
    const chat = 1010;
    const cmd = (text: string) => h.dm(chat, text, { entities: [{ type: 'bot_command', offset: 0, length: text.split(' ')[0]!.length }] });
    cmd('/status');
    await waitFor('status', () => h.answers(chat).length === 1);
    expect(h.answers(chat)[0]!.body.text).toBe('No run is active.');
    cmd('/start');
    await waitFor('start', () => h.answers(chat).length === 2);
    expect(h.answers(chat)[1]!.body.text).toContain('I am Switchboard');
    h.dm(chat, 'remember: blue');
    await waitFor('answer', () => h.answers(chat).length === 3);
    cmd('/reset');
    await waitFor('reset', () => h.answers(chat).length === 4);
    expect(h.answers(chat)[3]!.body.text).toContain('Fresh start');
    const before = h.stack.fake.requests.length;
    h.dm(chat, 'what colour?');
    await waitFor('answer', () => h.answers(chat).length === 5);
    expect((h.stack.fake.requests[before]!.body.messages as ChatMessage[]).map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('a document is saved into the session’s workspace and named in the message the model sees', async () => {
    const chat = 1011;
    h.tg.addFile({ fileId: 'NOTES', bytes: new TextEncoder().encode('- buy milk\n- call Ana\n') });
    h.dm(chat, '', {
      text: undefined,
      caption: 'what is in this?',
      document: { file_id: 'NOTES', file_unique_id: 'n1', file_name: 'notes.txt', mime_type: 'text/plain', file_size: 22 },
    });
    await waitFor('answer', () => h.answers(chat).length === 1);
    const seen = h
      .userTexts()
      .flat()
      .find((t) => t.startsWith('what is in this?'))!;
    expect(seen).toContain('[Attached files, in the workspace:]\n- uploads/notes.txt (22 B)');
    const saved = await readFile(join(h.stack.workspaceRoot, workspaceFolderName(`telegram:${chat}`), 'uploads', 'notes.txt'), 'utf8');
    expect(saved).toBe('- buy milk\n- call Ana\n');
  });

  it('an oversized document is refused politely, with no run', async () => {
    const chat = 1012;
    const before = h.stack.fake.requests.length;
    h.dm(chat, '', { text: undefined, caption: 'read this', document: { file_id: 'BIG', file_unique_id: 'b1', file_name: 'dump.zip', file_size: 25_000_000 } });
    await waitFor('the refusal', () => h.answers(chat).length === 1);
    expect(h.answers(chat)[0]!.body.text).toBe(
      "Sorry, I can't take dump.zip (25 MB): files over 20 MB are too large for me. Please send a smaller file, or paste the part you need.",
    );
    await sleep(300);
    expect(h.stack.fake.requests.length).toBe(before);
    expect(h.tg.callsOf('getFile').some((c) => c.body.file_id === 'BIG')).toBe(false);
  });

  it('readiness shows the channel connected with its last event', async () => {
    const res = await readyz(h.stack);
    const body = (await res.json()) as { channels: Record<string, { connected: boolean; lastEventAt?: string }> };
    expect(body.channels.telegram!.connected).toBe(true);
    expect(Date.parse(body.channels.telegram!.lastEventAt!)).toBeGreaterThan(Date.now() - 120_000);
    expect(ADA.id).toBe(4242);
  });
});
