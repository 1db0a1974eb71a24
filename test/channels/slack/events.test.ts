import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startStack, type Stack, readyz } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/processes.js';
import { startFakeSlack, BOT_TOKEN, BOT_USER_ID, type FakeSlack } from '../../fakes/slack-server.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { workspaceFolderName } from '../../../src/tools/workspace.js';
import { PIECE_LIMIT } from '../../../src/channels/slack/format.js';
import { answers, appMention, deferred, eventCallback, newUserTexts, nextTs, postCommand, postEvent, SIGNING_SECRET, statuses } from './helpers.js';

const CHANNEL = 'C0GENERAL';

describe('slack channel: signed Events API requests → Bolt on the gateway → queue → worker → Web API', () => {
  let stack: Stack | undefined;
  let slack: FakeSlack | undefined;

  async function start(name: string, env: Record<string, string> = {}): Promise<{ stack: Stack; slack: FakeSlack }> {
    slack = await startFakeSlack();
    // LINK_PREVIEWS=1: answers() and statuses() tell them apart by their unfurl arguments (see helpers.ts).
    stack = await startStack(name, {
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      LINK_PREVIEWS: '1',
      ...env,
    });
    // The gateway knows who the bot is (auth.test) before the first event.
    await waitFor('slack identity', async () => (await (await readyz(stack!)).json()).channels?.slack?.connected === true);
    return { stack, slack };
  }

  afterEach(async () => {
    await stack?.close();
    await slack?.close();
    stack = undefined;
    slack = undefined;
  });

  /** Waits until `n` jobs have completed (the reply is delivered a moment before the job settles). */
  async function completed(s: Stack, n: number): Promise<void> {
    await waitFor(`${n} completed job(s)`, async () => ((await s.queue.getJobCounts('completed')).completed ?? 0) >= n);
  }

  async function nothingQueued(s: Stack): Promise<void> {
    expect(await s.queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized')).toEqual({
      waiting: 0,
      active: 0,
      completed: 0,
      failed: 0,
      delayed: 0,
      prioritized: 0,
    });
  }

  it('signed events and /ask payloads with the wrong field types are acknowledged and skipped: no 5xx, nothing queued', async () => {
    const { stack, slack } = await start('slack-malformed');
    const good = appMention(CHANNEL, nextTs(), 'hello');
    const events = [
      { ...good, text: 42 },
      { ...good, channel: 1234 },
      { ...good, user: { id: 'U0ADA' } },
      { ...good, thread_ts: ['1.2'] },
      { ...good, files: 'not-a-list' },
      { ...good, ts: undefined },
    ];
    for (const [i, event] of events.entries()) {
      const res = await postEvent(stack.baseUrl, eventCallback(event));
      expect([i, res.status]).toEqual([i, 200]);
    }
    const ask = await postCommand(stack.baseUrl, { channel_id: '', user_id: 'U0ADA', text: 'what?' });
    expect(ask.status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    await nothingQueued(stack);
    expect(slack.messages).toHaveLength(0);
  });

  it('answers url_verification; refuses a bad signature and a stale or future timestamp with 401 and starts no run', async () => {
    const { stack, slack } = await start('slack-verify');
    const challenge = await postEvent(stack.baseUrl, { token: 'legacy', challenge: 'c2xhY2stY2hhbGxlbmdl', type: 'url_verification' });
    expect(challenge.status).toBe(200);
    expect(await challenge.json()).toEqual({ challenge: 'c2xhY2stY2hhbGxlbmdl' });

    const payload = eventCallback(appMention(CHANNEL, nextTs(), 'hello'));
    const body = JSON.stringify(payload);
    const forged = await fetch(`${stack.baseUrl}/slack/events`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)),
        'x-slack-signature': `v0=${'0'.repeat(64)}`,
      },
      body,
    });
    expect(forged.status).toBe(401);
    const stale = await postEvent(stack.baseUrl, payload, {}, Math.floor(Date.now() / 1000) - 6 * 60);
    expect(stale.status).toBe(401);
    // Signed an hour ahead: as replayable as an old one.
    const future = await postEvent(stack.baseUrl, payload, {}, Math.floor(Date.now() / 1000) + 3600);
    expect(future.status).toBe(401);
    const unsigned = await fetch(`${stack.baseUrl}/slack/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(unsigned.status).toBe(401);

    await nothingQueued(stack);
    expect(
      await stack.redis.llen(
        stack.keys.inbox(sessionKeyOf({ platform: 'slack', conversation: CHANNEL, thread: String((payload.event as { ts: string }).ts) })),
      ),
    ).toBe(0);
    expect(stack.fake.requests).toHaveLength(0);
    expect(slack.messages).toHaveLength(0);
  });

  it('a channel mention: eyes, one status message edited in the thread, the answer in the thread, then a check', async () => {
    const { stack, slack } = await start('slack-mention');
    const ts = nextTs();
    stack.fake.script([{ content: 'Let me look at the notes.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }] }]);
    // The answer waits until the status message has been edited once (the edit interval is ~1 s).
    stack.fake.setHandler(async () => {
      await waitFor('a status edit', () => slack.callsOf('chat.update').length > 0);
      return { content: 'The notes say: **buy milk**, see [the list](https://example.com/list).' };
    });
    const res = await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'what do my notes say?')));
    expect(res.status).toBe(200);

    await waitFor('the check reaction', () => slack.reactions.get(`${CHANNEL}:${ts}`)?.includes('white_check_mark'));
    const [answer, ...more] = answers(slack);
    expect(more).toEqual([]);
    expect(answer).toMatchObject({ channel: CHANNEL, thread_ts: ts, deleted: false });
    expect(answer!.text.replaceAll('\u200b', '')).toBe('The notes say: *buy milk*, see <https://example.com/list|the list>.');
    const [status, ...otherStatus] = statuses(slack);
    expect(otherStatus).toEqual([]);
    expect(status).toMatchObject({ channel: CHANNEL, thread_ts: ts, deleted: true });
    expect(status!.params.text).toBe('Let me look at the notes.');
    expect(status!.edits).toHaveLength(1);
    expect(status!.edits[0]).toMatch(/^Let me look at the notes\.\n• list_files \. → /);
    expect(slack.reactionLog.get(`${CHANNEL}:${ts}`)).toEqual(['+eyes', '-eyes', '+white_check_mark']);
    // In order: the status, its edit, the answer, then the status removed.
    const order = slack.calls
      .filter((c) => c.method.startsWith('chat.'))
      .map((c) => (c.method === 'chat.postMessage' ? (c.params.unfurl_links ? 'status' : 'answer') : c.method));
    expect(order).toEqual(['status', 'chat.update', 'answer', 'chat.delete']);
    // The model saw the text without the mention.
    expect(newUserTexts(stack.fake.requests[0]!.body)).toEqual(['what do my notes say?']);
    await completed(stack, 1);
    const ready = await (await readyz(stack)).json();
    expect(ready.channels.slack).toMatchObject({ connected: true, lastEventAt: expect.any(String) });

    // A reply in that thread without a mention is not for the bot by default.
    const reply = await postEvent(
      stack.baseUrl,
      eventCallback({ type: 'message', channel: CHANNEL, channel_type: 'channel', user: 'U0ADA', text: 'thanks!', ts: nextTs(), thread_ts: ts }),
    );
    expect(reply.status).toBe(200);
    expect(await stack.queue.getJobCounts('waiting', 'active')).toEqual({ waiting: 0, active: 0 });
    expect(stack.fake.requests).toHaveLength(2);
  });

  it('a DM is answered at the top level of the DM', async () => {
    const { stack, slack } = await start('slack-dm');
    stack.fake.script([{ content: 'Hello Ada.' }]);
    const ts = nextTs();
    const res = await postEvent(stack.baseUrl, eventCallback({ type: 'message', channel: 'D0ADA', channel_type: 'im', user: 'U0ADA', text: 'hi there', ts }));
    expect(res.status).toBe(200);
    await waitFor('the check reaction', () => slack.reactions.get(`D0ADA:${ts}`)?.includes('white_check_mark'));
    expect(answers(slack).map((m) => ({ channel: m.channel, thread_ts: m.thread_ts, text: m.text }))).toEqual([
      { channel: 'D0ADA', thread_ts: undefined, text: 'Hello Ada.' },
    ]);
    expect(newUserTexts(stack.fake.requests[0]!.body)).toEqual(['hi there']);
    await completed(stack, 1);
    // The bot's own answer, echoed back by Slack as a message.im event, starts nothing.
    const echo = await postEvent(
      stack.baseUrl,
      eventCallback({
        type: 'message',
        channel: 'D0ADA',
        channel_type: 'im',
        user: BOT_USER_ID,
        bot_id: 'B0BOT',
        text: 'Hello Ada.',
        ts: answers(slack)[0]!.ts,
      }),
    );
    expect(echo.status).toBe(200);
    expect(await stack.queue.getJobCounts('waiting', 'active')).toEqual({ waiting: 0, active: 0 });
    expect(stack.fake.requests).toHaveLength(1);
  });

  it('a retried event (X-Slack-Retry-Num) and the app_mention + message twin start one run and get one answer', async () => {
    const { stack, slack } = await start('slack-dedup');
    stack.fake.script([{ content: 'Only once.' }]);
    const ts = nextTs();
    const mention = appMention(CHANNEL, ts, 'count to one');
    const first = eventCallback(mention, 'Ev0DEDUP0001');
    const results = [
      await postEvent(stack.baseUrl, first),
      await postEvent(stack.baseUrl, first, { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' }),
      await postEvent(stack.baseUrl, eventCallback({ ...mention, type: 'message', channel_type: 'channel' }, 'Ev0DEDUP0002')),
    ];
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    // Every copy has been judged by the time its request was answered: only the first was enqueued.
    await waitFor('the check reaction', () => slack.reactions.get(`${CHANNEL}:${ts}`)?.includes('white_check_mark'));
    await completed(stack, 1);
    expect(await stack.queue.getJobCounts('waiting', 'active', 'completed', 'failed')).toEqual({ waiting: 0, active: 0, completed: 1, failed: 0 });
    expect(stack.fake.requests).toHaveLength(1);
    expect(answers(slack).map((m) => m.text)).toEqual(['Only once.']);
  });

  it('three quick mentions in one thread: each answered exactly once, in order, never two runs at a time', async () => {
    const { stack, slack } = await start('slack-three');
    let inFlight = 0;
    let maxInFlight = 0;
    stack.fake.setHandler(async (req) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 40));
      inFlight--;
      return { content: `answered: ${newUserTexts(req.body).join(' | ')}` };
    });
    const root = nextTs();
    const second = nextTs();
    const third = nextTs();
    const posted = [
      await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, root, 'first'))),
      await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, second, 'second', { thread_ts: root }))),
      await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, third, 'third', { thread_ts: root }))),
    ];
    expect(posted.map((r) => r.status)).toEqual([200, 200, 200]);

    const answered = () => answers(slack).flatMap((m) => m.text.replace(/^answered: /, '').split(' | '));
    await waitFor('all three answered', () => answered().length >= 3);
    await waitFor('every job settled', async () =>
      Object.values(await stack.queue.getJobCounts('waiting', 'active', 'prioritized', 'delayed')).every((n) => n === 0),
    );
    expect(answered()).toEqual(['first', 'second', 'third']);
    expect(answers(slack).every((m) => m.channel === CHANNEL && m.thread_ts === root)).toBe(true);
    expect(maxInFlight).toBe(1);
    expect(stack.fake.requests.flatMap((r) => newUserTexts(r.body))).toEqual(['first', 'second', 'third']);
    // Later turns carry the earlier ones as history: one conversation.
    const last = stack.fake.requests.at(-1)!.body.messages as { role: string; content: string }[];
    expect(last.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['first', 'second', 'third']);
    for (const ts of [root, second, third]) {
      await waitFor(`a check on ${ts}`, () => slack.reactions.get(`${CHANNEL}:${ts}`)?.includes('white_check_mark'));
    }
  });

  it('a 429 with Retry-After on chat.update still ends with exactly one final answer', async () => {
    const { stack, slack } = await start('slack-429');
    slack.fail('chat.update', { status: 429, retryAfter: 1 });
    const ts = nextTs();
    // The second step comes after the status message was posted, so its line is an edit (not folded into the post).
    stack.fake.script([
      { content: 'Looking around.', toolCalls: [{ name: 'list_files', arguments: '{}' }] },
      { content: 'Looking closer.', toolCalls: [{ name: 'list_files', arguments: '{}' }], delayMs: 300 },
    ]);
    stack.fake.setHandler(async () => {
      await waitFor('the rate-limited edit', () => slack.callsOf('chat.update', true).length > 0);
      return { content: 'Done looking.' };
    });
    expect((await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'look around')))).status).toBe(200);
    await waitFor('the check reaction', () => slack.reactions.get(`${CHANNEL}:${ts}`)?.includes('white_check_mark'));
    await completed(stack, 1);
    expect(answers(slack).map((m) => ({ text: m.text, thread_ts: m.thread_ts }))).toEqual([{ text: 'Done looking.', thread_ts: ts }]);
    const updates = slack.callsOf('chat.update', true);
    expect(updates.map((c) => c.status)).toEqual([429, 200]);
    expect(updates[0]!.params.text).toBe(updates[1]!.params.text);
    // The edit was retried before the answer went out, and the status message is gone.
    const answerCall = slack.calls.findIndex((c) => c.method === 'chat.postMessage' && c.params.unfurl_links === undefined);
    expect(slack.calls.indexOf(updates[1]!)).toBeLessThan(answerCall);
    expect(statuses(slack).map((m) => m.deleted)).toEqual([true]);
  });

  it('a long answer is split on paragraph boundaries into pieces posted in order in the thread', async () => {
    const { stack, slack } = await start('slack-long');
    const paragraphs = Array.from({ length: 36 }, (_, i) => `Section ${i + 1}. ${'The quick brown fox jumps over the lazy dog. '.repeat(6).trim()}`);
    stack.fake.script([{ content: paragraphs.join('\n\n') }]);
    const ts = nextTs();
    expect((await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'write a long text')))).status).toBe(200);
    await waitFor('the check reaction', () => slack.reactions.get(`${CHANNEL}:${ts}`)?.includes('white_check_mark'));
    const pieces = answers(slack);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    for (const p of pieces) {
      expect(p.text.length).toBeLessThanOrEqual(PIECE_LIMIT);
      expect(p.thread_ts).toBe(ts);
      expect(p.text.startsWith('Section ')).toBe(true);
    }
    expect(pieces.flatMap((p) => p.text.split('\n\n'))).toEqual(paragraphs);
    expect(pieces.map((p) => p.ts)).toEqual([...pieces.map((p) => p.ts)].sort());
  });

  it('acknowledges the event before the (slow) model has answered', async () => {
    const { stack, slack } = await start('slack-ack');
    const gate = deferred();
    stack.fake.setHandler(async () => {
      await gate.promise;
      return { content: 'Finally.' };
    });
    const ts = nextTs();
    const res = await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'take your time')));
    expect(res.status).toBe(200);
    // Acked while the run cannot have finished: the model has not answered, nothing is posted.
    expect(answers(slack)).toHaveLength(0);
    await waitFor('the model request', () => stack.fake.requests.length === 1);
    expect(answers(slack)).toHaveLength(0);
    gate.resolve();
    await waitFor('the answer', () => answers(slack).length === 1);
    expect(answers(slack)[0]).toMatchObject({ text: 'Finally.', thread_ts: ts });
  });

  it('/ask: an ephemeral acknowledgement, then the answer at the top level of the channel naming who asked', async () => {
    const { stack, slack } = await start('slack-ask');
    stack.fake.script([{ content: 'Four.' }]);
    const res = await postCommand(stack.baseUrl, { channel_id: CHANNEL, user_id: 'U0ADA', text: 'what is 2+2?' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ response_type: 'ephemeral', text: 'Working on it — the answer will appear here.' });
    await waitFor('the answer', () => answers(slack).length === 1);
    expect(answers(slack)[0]).toMatchObject({ channel: CHANNEL, text: '<@U0ADA> asked: what is 2+2?\n\nFour.' });
    expect(answers(slack)[0]!.thread_ts).toBeUndefined();
    expect(newUserTexts(stack.fake.requests[0]!.body)).toEqual(['what is 2+2?']);
    await completed(stack, 1);

    const status = await postCommand(stack.baseUrl, { channel_id: CHANNEL, user_id: 'U0ADA', text: 'status' });
    expect(await status.json()).toEqual({ response_type: 'ephemeral', text: expect.stringMatching(/^No run is active\. Last run: completed, \d+ s ago\.$/) });
    const usage = await postCommand(stack.baseUrl, { channel_id: CHANNEL, user_id: 'U0ADA', text: '' });
    expect(((await usage.json()) as { text: string }).text).toMatch(/^Usage: `\/ask your question`/);
    const unknown = await postCommand(stack.baseUrl, { channel_id: CHANNEL, user_id: 'U0ADA', text: '/frobnicate' });
    expect(((await unknown.json()) as { text: string }).text).toMatch(/^Unknown command \/frobnicate/);
    expect(stack.fake.requests).toHaveLength(1);
  });

  it('a command in a mention (/status) is answered in the thread at once, once, and starts no run', async () => {
    const { stack, slack } = await start('slack-cmd');
    const ts = nextTs();
    const mention = appMention(CHANNEL, ts, '/status');
    expect((await postEvent(stack.baseUrl, eventCallback(mention))).status).toBe(200);
    // Its message twin is judged a duplicate: the command is answered once.
    expect((await postEvent(stack.baseUrl, eventCallback({ ...mention, type: 'message', channel_type: 'channel' }))).status).toBe(200);
    await waitFor('the status reply', () => answers(slack).length === 1);
    expect(answers(slack)[0]).toMatchObject({ channel: CHANNEL, thread_ts: ts, text: 'No run is active.' });
    expect(slack.callsOf('chat.postMessage', true)).toHaveLength(1);
    await nothingQueued(stack);
    expect(stack.fake.requests).toHaveLength(0);
  });

  it('a file shared with a mention is downloaded with the bot token into the workspace', async () => {
    const { stack, slack } = await start('slack-files');
    const file = slack.addFile('meeting notes.md', new TextEncoder().encode('# Meeting\n\n- Send the budget to Ana\n'), 'text/markdown');
    stack.fake.script([{ content: 'Got it.' }]);
    const ts = nextTs();
    const event = appMention(CHANNEL, ts, 'summarise the attached file', { files: [{ ...file, mode: 'hosted', filetype: 'markdown' }] });
    expect((await postEvent(stack.baseUrl, eventCallback(event))).status).toBe(200);
    await waitFor('the answer', () => answers(slack).length === 1);
    const session = sessionKeyOf({ platform: 'slack', conversation: CHANNEL, thread: ts });
    const saved = await readFile(join(stack.workspaceRoot, workspaceFolderName(session), 'uploads', 'meeting notes.md'), 'utf8');
    expect(saved).toBe('# Meeting\n\n- Send the budget to Ana\n');
    expect(slack.fileRequests).toEqual([{ path: expect.stringContaining('/files-pri/'), authorization: `Bearer ${BOT_TOKEN}` }]);
    expect(newUserTexts(stack.fake.requests[0]!.body)).toEqual([
      'summarise the attached file\n\n[Attached files, in the workspace:]\n- uploads/meeting notes.md (36 B)',
    ]);
  });

  it('a file over ATTACHMENT_MAX_BYTES is not downloaded; the model is told why', async () => {
    const { stack, slack } = await start('slack-bigfile', { ATTACHMENT_MAX_BYTES: '10' });
    const file = slack.addFile('big.txt', new TextEncoder().encode('x'.repeat(100)), 'text/plain');
    stack.fake.script([{ content: 'Too big.' }]);
    const ts = nextTs();
    expect((await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'read it', { files: [file] })))).status).toBe(200);
    await waitFor('the answer', () => answers(slack).length === 1);
    expect(slack.fileRequests).toHaveLength(0);
    expect(newUserTexts(stack.fake.requests[0]!.body)[0]).toMatch(/- big\.txt \(100 B\): not saved, larger than the/);
  });

  it('a failed run ends with one honest line in the thread and a warning reaction', async () => {
    const { stack, slack } = await start('slack-fail', { AGENT_MODEL_RETRIES: '0' });
    stack.fake.script([{ status: 500 }]);
    const ts = nextTs();
    expect((await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'try this')))).status).toBe(200);
    await waitFor('the warning reaction', () => slack.reactions.get(`${CHANNEL}:${ts}`)?.includes('warning'));
    expect(answers(slack).map((m) => ({ text: m.text, thread_ts: m.thread_ts }))).toEqual([
      { text: 'I could not get an answer from the model (it kept failing). Please try again in a moment.', thread_ts: ts },
    ]);
    expect(slack.reactions.get(`${CHANNEL}:${ts}`)).toEqual(['warning']);
  });
});

describe('slack thread follow-ups (SLACK_THREAD_FOLLOWUPS=1)', () => {
  let stack: Stack | undefined;
  let slack: FakeSlack | undefined;
  afterEach(async () => {
    await stack?.close();
    await slack?.close();
    stack = undefined;
    slack = undefined;
  });

  it('a reply without a mention counts in a thread the bot answered, not in other threads', async () => {
    slack = await startFakeSlack();
    stack = await startStack('slack-followups', {
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      SLACK_THREAD_FOLLOWUPS: '1',
      LINK_PREVIEWS: '1',
    });
    const s = stack;
    const fake = slack;
    await waitFor('slack identity', async () => (await (await readyz(s)).json()).channels?.slack?.connected === true);
    s.fake.setHandler((req) => ({ content: `re: ${newUserTexts(req.body).join(' | ')}` }));
    const root = nextTs();
    await postEvent(s.baseUrl, eventCallback(appMention(CHANNEL, root, 'start')));
    await waitFor('the first answer', () => answers(fake).length === 1);
    await waitFor('the first job', async () => (await s.queue.getJobCounts('completed')).completed === 1);

    const other = nextTs();
    const ignored = await postEvent(
      s.baseUrl,
      eventCallback({ type: 'message', channel: CHANNEL, channel_type: 'channel', user: 'U0BOB', text: 'unrelated', ts: nextTs(), thread_ts: other }),
    );
    expect(ignored.status).toBe(200);
    const followup = await postEvent(
      s.baseUrl,
      eventCallback({ type: 'message', channel: CHANNEL, channel_type: 'channel', user: 'U0ADA', text: 'and then?', ts: nextTs(), thread_ts: root }),
    );
    expect(followup.status).toBe(200);
    await waitFor('the second answer', () => answers(fake).length === 2);
    expect(answers(fake).map((m) => ({ text: m.text, thread_ts: m.thread_ts }))).toEqual([
      { text: 're: start', thread_ts: root },
      { text: 're: and then?', thread_ts: root },
    ]);
    expect(s.fake.requests).toHaveLength(2);
  });
});

describe('slack with a bad bot token', () => {
  let stack: Stack | undefined;
  let slack: FakeSlack | undefined;
  afterEach(async () => {
    await stack?.close();
    await slack?.close();
  });

  it('the gateway still starts; readiness says why Slack is not connected', async () => {
    slack = await startFakeSlack();
    stack = await startStack('slack-badtoken', { SLACK_BOT_TOKEN: 'xoxb-revoked', SLACK_SIGNING_SECRET: SIGNING_SECRET, SLACK_API_URL: slack.apiUrl });
    const res = await readyz(stack);
    expect(res.status).toBe(503);
    const body = await res.json();
    expect(body.channels.slack).toEqual({ connected: false, detail: 'auth.test failed: invalid_auth (check SLACK_BOT_TOKEN)' });
    expect(body.problems).toContain('slack: auth.test failed: invalid_auth (check SLACK_BOT_TOKEN)');
  });
});
