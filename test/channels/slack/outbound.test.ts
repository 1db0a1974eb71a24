import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createLogger } from '../../../src/log.js';
import { SlackOutbound } from '../../../src/channels/slack/outbound.js';
import { SlackRateLimited, SlackRefused, SlackUnknownOutcome } from '../../../src/channels/slack/errors.js';
import { MAY_REPEAT_NOTE, memoryLedger } from '../../../src/channels/kit/pieces.js';
import { engagedThreadKey } from '../../../src/channels/slack/ids.js';
import type { InboundMessage, OutgoingFile } from '../../../src/channels/types.js';
import { SLACK_UPLOAD_MAX_BYTES, uploadTransport } from '../../../src/channels/slack/upload.js';
import { BOT_TOKEN, startFakeSlack, UPLOAD_URL, type FakeSlack } from '../../fakes/slack-server.js';
import { dropPrefix, testRedis, uniquePrefix } from '../../helpers/redis.js';

const log = createLogger(process.env.TEST_LOG ? 'debug' : 'silent');

/** A workspace file as the send_file tool hands it over (its bytes in memory). */
function outgoing(name: string, text: string, caption?: string): OutgoingFile {
  const bytes = new TextEncoder().encode(text);
  return {
    name,
    path: name,
    absolutePath: `/workspace/${name}`,
    size: bytes.byteLength,
    mime: 'text/csv',
    ...(caption !== undefined && { caption }),
    read: async () => bytes,
  };
}

const UPLOAD_STEPS = ['files.getUploadURLExternal', UPLOAD_URL, 'files.completeUploadExternal'];

function mentionIn(channel: string, ts: string, thread = ts): InboundMessage {
  return {
    v: 1,
    id: `${channel}:${ts}`,
    platform: 'slack',
    conversation: channel,
    thread,
    sender: { id: 'U0ADA' },
    text: 'hi',
    attachments: [],
    eventId: `${channel}:${ts}`,
    receivedAt: 0,
    replyTo: ts,
  };
}

describe('slack outbound over the Web API (fake Slack)', () => {
  let slack: FakeSlack;
  let redis: Redis;
  let prefix: string;
  let out: SlackOutbound;
  /** Moves the adapter's pacer clock on (a delivery tried again minutes later). */
  let later = 0;
  const to = mentionIn('C0CHAN', '1700000000.000100');

  beforeEach(async () => {
    later = 0;
    slack = await startFakeSlack();
    redis = testRedis();
    prefix = uniquePrefix('slack-out');
    out = new SlackOutbound({ token: BOT_TOKEN, apiUrl: slack.apiUrl, redis, prefix, log, now: () => Date.now() + later });
  });
  afterEach(async () => {
    await slack.close();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  it('posts an answer in the thread of the message it answers and marks the thread as answered', async () => {
    const ids = await out.post(to, 'Here is **the** answer', 'answer');
    expect(ids).toEqual([slack.messages[0]!.ts]);
    expect(slack.messages.map((m) => ({ channel: m.channel, thread_ts: m.thread_ts, text: m.text.replaceAll('\u200b', '') }))).toEqual([
      { channel: 'C0CHAN', thread_ts: '1700000000.000100', text: 'Here is *the* answer' },
    ]);
    expect(await redis.exists(engagedThreadKey(prefix, 'C0CHAN', '1700000000.000100'))).toBe(1);
  });

  it('a DM answer goes at the top level and marks nothing', async () => {
    const dm: InboundMessage = { ...mentionIn('D0DM', '1700000000.000200'), thread: undefined } as InboundMessage;
    delete dm.thread;
    await out.post(dm, 'hello', 'answer');
    expect(slack.messages[0]).toMatchObject({ channel: 'D0DM', text: 'hello' });
    expect(slack.messages[0]!.thread_ts).toBeUndefined();
  });

  it('an /ask answer names who asked and what, at the top level', async () => {
    const ask: InboundMessage = {
      v: 1,
      id: 'ask:1.2.3',
      platform: 'slack',
      conversation: 'C0CHAN',
      sender: { id: 'U0ADA' },
      text: 'what is <2>?',
      attachments: [],
      eventId: 'ask:1.2.3',
      receivedAt: 0,
      meta: { via: 'ask', user: 'U0ADA' },
    };
    await out.post(ask, 'Four.', 'answer');
    expect(slack.messages[0]!.text).toBe('<@U0ADA> asked: what is &lt;2&gt;?\n\nFour.');
    expect(slack.messages[0]!.thread_ts).toBeUndefined();
  });

  it('a 429 on chat.postMessage is waited out (Retry-After) and the piece posted once', async () => {
    slack.fail('chat.postMessage', { status: 429, retryAfter: 1 });
    const ids = await out.post(to, 'after the limit', 'answer');
    const attempts = slack.callsOf('chat.postMessage', true);
    expect(attempts.map((c) => c.status)).toEqual([429, 200]);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
    expect(slack.messages.map((m) => m.text)).toEqual(['after the limit']);
    expect(ids).toEqual([slack.messages[0]!.ts]);
  });

  it('a chat.postMessage whose response is lost (it may have been posted) is never left as silence: looked up, and found, it is not sent again', async () => {
    slack.addMessage('C0CHAN', 'hi', { ts: to.thread! });
    slack.fail('chat.postMessage', { drop: true });
    const ledger = memoryLedger();
    const ids = await out.post(to, 'only once', 'answer', ledger);
    expect(ids).toEqual([slack.messages[0]!.ts]);
    expect(await out.post(to, 'only once', 'answer', ledger)).toEqual(ids);
    expect(slack.callsOf('chat.postMessage', true)).toHaveLength(1);
    expect(slack.callsOf('conversations.replies')).toHaveLength(1);
    expect(slack.messages.map((m) => m.text)).toEqual(['only once']);
  });

  it('a lost response Slack cannot look up (the thread is unknown to it) is sent again at once, with the may-repeat note', async () => {
    // The fake has never seen the thread's parent: conversations.replies answers thread_not_found.
    slack.fail('chat.postMessage', { drop: true });
    const ledger = memoryLedger();
    const ids = await out.post(to, 'only once', 'answer', ledger);
    expect(ids).toHaveLength(1);
    expect(slack.callsOf('conversations.replies', true).map((c) => c.error)).toEqual(['thread_not_found']);
    expect(slack.messages.map((m) => m.text)).toEqual(['only once', `${MAY_REPEAT_NOTE}only once`]);
  });

  it('an internal_error on chat.postMessage is not retried blindly: looked up, and not there, it is sent again plainly; a refusal is thrown and says why', async () => {
    slack.addMessage('C0CHAN', 'hi', { ts: to.thread! });
    slack.fail('chat.postMessage', { error: 'internal_error' });
    const ledger = memoryLedger();
    await out.post(to, 'x', 'answer', ledger);
    expect(ledger.state(0)).toMatchObject({ posted: expect.any(String) });
    expect(slack.messages.map((m) => m.text)).toEqual(['x']);
    expect(slack.callsOf('chat.postMessage', true)).toHaveLength(2);
    slack.fail('chat.postMessage', { error: 'not_in_channel' });
    const refused = await out.post(to, 'y', 'answer').catch((e: unknown) => e);
    expect(refused).toMatchObject({ name: 'SlackRefused', code: 'not_in_channel' });
    expect(out.classifyWriteError(refused)).toBe('refused');
    expect(out.classifyWriteError(new SlackUnknownOutcome('chat.postMessage', new Error('reset')))).toBe('unknown');
    expect(slack.callsOf('chat.postMessage', true)).toHaveLength(3);
  });

  it('delivering the same reply again after a failure mid-way posts only the missing pieces', async () => {
    const long = Array.from({ length: 30 }, (_, i) => `Paragraph ${i + 1}. ${'words '.repeat(40).trim()}`).join('\n\n');
    // The second piece meets a 429 longer than we wait (not posted): the delivery fails after piece 1.
    slack.fail('chat.postMessage', { pass: true }, { status: 429, retryAfter: 120 });
    const ledger = memoryLedger();
    await expect(out.post(to, long, 'answer', ledger)).rejects.toBeInstanceOf(SlackRateLimited);
    expect(slack.messages).toHaveLength(1);
    // The delivery is tried again once the Retry-After has passed.
    later += 120_000;
    const ids = await out.post(to, long, 'answer', ledger);
    expect(ids.length).toBeGreaterThan(2);
    expect(slack.messages.map((m) => m.ts)).toEqual(ids);
    const firstWords = slack.messages.map((m) => Number(/^Paragraph (\d+)\./.exec(m.text)![1]));
    expect(firstWords[0]).toBe(1);
    expect([...firstWords].sort((a, b) => a - b)).toEqual(firstWords);
    expect(slack.messages.map((m) => m.text).join('\n\n')).toBe(long);
  });

  it('edits the status message with chat.update; a 429 there is waited out; an internal_error retried', async () => {
    const [status] = await out.post(to, '• reading <notes.md>', 'status');
    slack.fail('chat.update', { status: 429, retryAfter: 1 }, { error: 'internal_error' });
    await out.edit(to, status!, '• reading notes.md\n• searching');
    expect(slack.callsOf('chat.update', true).map((c) => (c.status === 429 ? 429 : (c.error ?? 'ok')))).toEqual([429, 'internal_error', 'ok']);
    expect(slack.messages[0]!.edits).toEqual(['• reading notes.md\n• searching']);
    expect(slack.messages[0]!.text).toBe('• reading notes.md\n• searching');
    expect(slack.callsOf('chat.postMessage')[0]!.params).toMatchObject({ text: '• reading &lt;notes.md&gt;', unfurl_links: 'false' });
  });

  it('removes the status message; one already gone counts as removed', async () => {
    const [status] = await out.post(to, 'working', 'status');
    await out.remove(to, status!);
    expect(slack.messages[0]!.deleted).toBe(true);
    await expect(out.remove(to, status!)).resolves.toBeUndefined();
    await expect(out.edit(to, status!, 'x')).rejects.toMatchObject({ code: 'message_not_found' });
  });

  it('acknowledges with eyes while working, then a check (completed) on every answered message', async () => {
    await out.typing(to);
    await out.typing(to);
    await out.ended(to, { runId: 'r1', state: 'completed', messageIds: ['C0CHAN:1700000000.000050', to.id, 'ask:1.2'] });
    expect(slack.reactionLog.get('C0CHAN:1700000000.000100')).toEqual(['+eyes', '-eyes', '+white_check_mark']);
    expect(slack.reactionLog.get('C0CHAN:1700000000.000050')).toEqual(['+white_check_mark']);
    // typing twice adds eyes once; the end adds a check to both messages.
    expect(slack.callsOf('reactions.add', true)).toHaveLength(3);
  });

  it('a failed run ends with a warning; a reaction that fails never fails the delivery', async () => {
    await out.typing(to);
    slack.fail('reactions.add', { error: 'invalid_name' });
    await expect(out.ended(to, { runId: 'r1', state: 'failed', reason: 'model_error', messageIds: [to.id] })).resolves.toBeUndefined();
    expect(slack.reactions.get('C0CHAN:1700000000.000100')).toEqual([]);
    await out.ended(to, { runId: 'r1', state: 'failed', reason: 'model_error', messageIds: [to.id] });
    expect(slack.reactions.get('C0CHAN:1700000000.000100')).toEqual(['warning']);
  });

  it('downloads a shared file with the bot token, within the byte cap', async () => {
    const bytes = new TextEncoder().encode('# Notes\n\nBuy milk.\n');
    const file = slack.addFile('notes.md', bytes, 'text/markdown');
    const got = await out.download(
      { name: 'notes.md', ref: file.url_private_download, size: file.size, mime: file.mimetype },
      1_000,
      AbortSignal.timeout(5_000),
    );
    expect(new TextDecoder().decode(got)).toBe('# Notes\n\nBuy milk.\n');
    expect(slack.fileRequests.map((r) => r.authorization)).toEqual([`Bearer ${BOT_TOKEN}`]);
    await expect(out.download({ name: 'notes.md', ref: file.url_private_download, mime: file.mimetype }, 10, AbortSignal.timeout(5_000))).rejects.toThrow(
      'larger than the 10 B limit',
    );
  });

  it('refuses Slack’s sign-in page (missing files:read) and never sends the token elsewhere', async () => {
    const badToken = new SlackOutbound({ token: 'xoxb-wrong', apiUrl: slack.apiUrl, redis, prefix, log });
    const file = slack.addFile('data.csv', new TextEncoder().encode('a,b\n1,2\n'), 'text/csv');
    await expect(badToken.download({ name: 'data.csv', ref: file.url_private, mime: 'text/csv' }, 1_000, AbortSignal.timeout(5_000))).rejects.toThrow(
      /files:read/,
    );
    const requests = slack.fileRequests.length;
    await expect(out.download({ name: 'x', ref: 'http://127.0.0.2:9/evil' }, 1_000, AbortSignal.timeout(5_000))).rejects.toThrow(/not a Slack file URL/);
    expect(slack.fileRequests.length).toBe(requests);
  });

  it('an invalid token is a refusal with Slack’s error code', async () => {
    const bad = new SlackOutbound({ token: 'xoxb-revoked', apiUrl: slack.apiUrl, redis, prefix, log });
    const err = await bad.post(to, 'x', 'answer').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SlackRefused);
    expect(err).toMatchObject({ code: 'invalid_auth' });
    expect(slack.messages).toHaveLength(0);
  });

  describe('upload (files.uploadV2 against the fake external upload flow)', () => {
    const signal = () => AbortSignal.timeout(10_000);
    const steps = () =>
      slack.calls.filter((c) => UPLOAD_STEPS.includes(c.method)).map((c) => (c.status === 200 && !c.error ? c.method : `${c.method} ${c.error ?? c.status}`));
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

    it('shares the file in the thread of the message it answers: its bytes, name, and the caption escaped as plain text', async () => {
      const id = await out.upload(to, outgoing('report.csv', 'a,b\n1,2\n', 'Q3 <numbers> & notes'), signal());
      expect(steps()).toEqual(UPLOAD_STEPS);
      expect(slack.callsOf('files.getUploadURLExternal')[0]!.params).toMatchObject({ filename: 'report.csv', length: '8' });
      expect(slack.uploads).toHaveLength(1);
      const [shared] = slack.uploads;
      expect(shared).toMatchObject({
        id,
        filename: 'report.csv',
        length: 8,
        title: 'report.csv',
        channel_id: 'C0CHAN',
        thread_ts: '1700000000.000100',
        initial_comment: 'Q3 &lt;numbers&gt; &amp; notes',
      });
      expect(text(shared!.bytes)).toBe('a,b\n1,2\n');
      expect(id).toMatch(/^F0UP/);
      // The file is the message: no chat.postMessage beside it.
      expect(slack.messages).toHaveLength(0);
    });

    it('in a DM the user did not thread it goes at the top level; no caption, no initial_comment', async () => {
      const dm: InboundMessage = { ...mentionIn('D0DM', '1700000000.000200') };
      delete dm.thread;
      await out.upload(dm, outgoing('notes.txt', 'hello'), signal());
      expect(slack.uploads).toHaveLength(1);
      expect(slack.uploads[0]).toMatchObject({ channel_id: 'D0DM', filename: 'notes.txt' });
      expect(slack.uploads[0]!.thread_ts).toBeUndefined();
      expect(slack.uploads[0]!.initial_comment).toBeUndefined();
      expect(slack.callsOf('files.completeUploadExternal')[0]!.params.thread_ts).toBeUndefined();
    });

    it('a 429 on files.completeUploadExternal is waited out (Retry-After) and the whole upload repeated: the file is shared once', async () => {
      slack.fail('files.completeUploadExternal', { status: 429, retryAfter: 1 });
      const id = await out.upload(to, outgoing('report.csv', 'x,y\n'), signal());
      expect(steps()).toEqual([...UPLOAD_STEPS.slice(0, 2), 'files.completeUploadExternal ratelimited', ...UPLOAD_STEPS]);
      const completes = slack.callsOf('files.completeUploadExternal', true);
      expect(completes[1]!.at - completes[0]!.at).toBeGreaterThanOrEqual(950);
      expect(slack.uploads.map((u) => ({ id: u.id, body: text(u.bytes) }))).toEqual([{ id, body: 'x,y\n' }]);
    });

    it('a 429 at the upload URL is waited out too; the bytes arrive once', async () => {
      slack.fail(UPLOAD_URL, { status: 429, retryAfter: 1 });
      await out.upload(to, outgoing('report.csv', 'x,y\n'), signal());
      expect(slack.callsOf(UPLOAD_URL, true).map((c) => c.status)).toEqual([429, 200]);
      expect(slack.uploads.map((u) => text(u.bytes))).toEqual(['x,y\n']);
    });

    it('a refusal (not_in_channel at completion, file_uploads_disabled up front) is thrown as SlackRefused: refused, not repeated, nothing shared', async () => {
      slack.fail('files.completeUploadExternal', { error: 'not_in_channel' });
      const notIn = await out.upload(to, outgoing('report.csv', 'x'), signal()).catch((e: unknown) => e);
      expect(notIn).toMatchObject({ name: 'SlackRefused', code: 'not_in_channel' });
      expect(out.classifyWriteError(notIn)).toBe('refused');
      slack.fail('files.getUploadURLExternal', { error: 'file_uploads_disabled' });
      const disabled = await out.upload(to, outgoing('report.csv', 'x'), signal()).catch((e: unknown) => e);
      expect(disabled).toMatchObject({ name: 'SlackRefused', code: 'file_uploads_disabled' });
      expect(out.classifyWriteError(disabled)).toBe('refused');
      expect(steps()).toEqual([...UPLOAD_STEPS.slice(0, 2), 'files.completeUploadExternal not_in_channel', 'files.getUploadURLExternal file_uploads_disabled']);
      expect(slack.uploads).toHaveLength(0);
    });

    it('a lost answer of files.completeUploadExternal (after the bytes went up) is unknown, never retry: it is not sent again', async () => {
      slack.fail('files.completeUploadExternal', { drop: true });
      const lost = await out.upload(to, outgoing('report.csv', 'once'), signal()).catch((e: unknown) => e);
      expect(lost).toBeInstanceOf(SlackUnknownOutcome);
      expect(out.classifyWriteError(lost)).toBe('unknown');
      // Slack did share it; we only never heard so, and did not try again.
      expect(steps()).toEqual(UPLOAD_STEPS);
      expect(slack.uploads.map((u) => text(u.bytes))).toEqual(['once']);

      slack.fail('files.completeUploadExternal', { error: 'internal_error' });
      const internal = await out.upload(to, outgoing('report.csv', 'twice'), signal()).catch((e: unknown) => e);
      expect(out.classifyWriteError(internal)).toBe('unknown');
      expect(slack.callsOf('files.completeUploadExternal', true)).toHaveLength(2);
    });

    it('a failed POST of the bytes is thrown and not repeated; nothing is shared', async () => {
      slack.fail(UPLOAD_URL, { error: 'upstream_failure' });
      const err = await out.upload(to, outgoing('report.csv', 'x'), signal()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SlackUnknownOutcome);
      expect(out.classifyWriteError(err)).not.toBe('retry');
      expect(steps()).toEqual(['files.getUploadURLExternal', `${UPLOAD_URL} upstream_failure`]);
      expect(slack.uploads).toHaveLength(0);
    });

    it('takes files up to 1 GB; the bot token never goes to an upload URL that is not Slack’s', async () => {
      expect(out.uploadMaxBytes).toBe(SLACK_UPLOAD_MAX_BYTES);
      expect(SLACK_UPLOAD_MAX_BYTES).toBe(1_000_000_000);
      const send = uploadTransport(slack.apiUrl, 10, signal());
      await expect(send('http://127.0.0.2:9/upload/v1/x', { method: 'POST', headers: { Authorization: `Bearer ${BOT_TOKEN}` } })).rejects.toThrow(
        /not sent there/,
      );
      await expect(send('https://evil.example/upload/v1/x', { method: 'POST' })).rejects.toThrow(/evil\.example; the bot token is not sent there/);
    });
  });
});
