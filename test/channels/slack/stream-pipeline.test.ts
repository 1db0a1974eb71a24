import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { escapePlain, slackPieces } from '../../../src/channels/slack/format.js';
import { STILL_WRITING, STREAM_INTERVAL_MS } from '../../../src/channels/slack/stream.js';
import { INCOMPLETE_MARK } from '../../../src/run/delivery/reply.js';
import { startFakeSlack, TEAM_ID, type Call, type FakeMessage, type FakeSlack } from '../../fakes/slack-server.js';
import type { Stack } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/processes.js';
import { answers, appMention, eventCallback, nextTs, postEvent, startSlackStack } from './helpers.js';

const ANSWER = Array.from({ length: 12 }, (_, i) => `Paragraph ${i + 1}: the streamed answer grows while the model writes it, one piece at a time.`).join(
  '\n\n',
);
/** Markdown that formatting changes (bold) and characters that escaping changes: the final text must be the formatted one. */
const MARKDOWN_ANSWER = `**Summary** of <things> & more\n\n${ANSWER}`;
const MODEL_FAILING = 'I could not get an answer from the model (it kept failing). Please try again in a moment.';
/** A write goes when the pacer gives it its turn; its way to the fake takes a few ms, more on a loaded machine. */
const SLACK = 50;

/** What a non-streamed answer shows: `post` sends these pieces (one message for these answers). */
const formatted = (markdown: string) => slackPieces(markdown).join('');

describe('slack: STREAM_ANSWERS (the default) through the real roles — native streams in a thread, chat.update elsewhere', () => {
  let slack: FakeSlack;
  let stack: Stack;

  beforeAll(async () => {
    slack = await startFakeSlack();
    stack = await startSlackStack('slack-stream-pipeline', slack, { AGENT_MODEL_RETRIES: '2' });
  });
  afterAll(async () => {
    await stack?.close();
    await slack?.close();
  });

  /**
   * A mention in a channel thread (a reply under `thread`, or a top-level one that starts it);
   * `team` as Slack's events carry it (user_team / team) unless null. Returns the session's thread.
   */
  async function mention(channel: string, text: string, options: { team?: string | null; thread?: string } = {}): Promise<string> {
    const ts = nextTs();
    const team = options.team === undefined ? TEAM_ID : options.team;
    const extra = { ...(team !== null && { team, user_team: team }), ...(options.thread !== undefined && { thread_ts: options.thread }) };
    expect((await postEvent(stack.baseUrl, eventCallback(appMention(channel, ts, text, extra)))).status).toBe(200);
    return options.thread ?? ts;
  }

  /** The run committed and its reply was delivered: `last` is written before delivery, the outbox goes once it is out. */
  const ended = (channel: string, thread: string, ms: number) => {
    const session = sessionKeyOf({ platform: 'slack', conversation: channel, thread });
    return waitFor(
      'the run to end',
      async () => (await stack.redis.get(stack.keys.last(session))) !== null && (await stack.redis.exists(stack.keys.outbox(session))) === 0,
      ms,
    );
  };

  /** The answer messages in the thread (status messages are posted without unfurls; they are not answers). */
  const answersIn = (channel: string, thread: string): FakeMessage[] => answers(slack, channel).filter((m) => m.thread_ts === thread);
  const visibleAnswers = (channel: string, thread: string) => answersIn(channel, thread).filter((m) => !m.deleted);

  /** Every call that wrote the answer message `ts` in `channel` (its post or stream start included), in order. */
  function writesOf(channel: string, ts: string): Call[] {
    return slack.calls.filter((c) => {
      if (c.params.channel !== channel) return false;
      if (c.method === 'chat.startStream') return true;
      if (c.method === 'chat.postMessage') return c.params.unfurl_links === undefined;
      return ['chat.appendStream', 'chat.stopStream', 'chat.update'].includes(c.method) && c.params.ts === ts;
    });
  }

  /** Calls of `method` in `channel` (all of them, refused ones included). */
  const callsIn = (channel: string, method: string) => slack.callsOf(method, true).filter((c) => c.params.channel === channel);

  /** Every write of the answer message, the final ones (stopping its stream, putting in the final text) included: ≥ the pacing apart. */
  function expectPaced(calls: Call[]): void {
    for (let i = 1; i < calls.length; i++)
      expect(calls[i]!.at - calls[i - 1]!.at, `write ${i} (${calls[i]!.method})`).toBeGreaterThanOrEqual(STREAM_INTERVAL_MS - SLACK);
  }

  it('a long answer in a channel thread with the team known: one native stream (start, growing appends, stop), then the exact formatted answer, once', async () => {
    const channel = 'C0STREAM1';
    const parent = nextTs();
    stack.fake.script([{ content: MARKDOWN_ANSWER, chunks: 8, chunkDelayMs: 500 }]);
    const thread = await mention(channel, 'write a long answer', { thread: parent });
    expect(thread).toBe(parent);
    await ended(channel, thread, 30_000);
    await sleep(200);

    const messages = answersIn(channel, thread);
    expect(messages).toHaveLength(1);
    const [answer] = messages;
    // A native stream to the asker, in the thread.
    expect(answer!.stream).toBeDefined();
    const starts = callsIn(channel, 'chat.startStream');
    expect(starts).toHaveLength(1);
    expect(starts[0]!.params).toMatchObject({ channel, thread_ts: thread, recipient_user_id: 'U0ADA', recipient_team_id: TEAM_ID });
    // Growing appends, append-only: together the chunks are the escaped answer as the model wrote it, nothing lost or repeated.
    expect(answer!.stream!.chunks.length).toBeGreaterThanOrEqual(3);
    expect(answer!.stream!.chunks.every((c) => c.length > 0)).toBe(true);
    const streamedText = answer!.stream!.chunks.join('');
    expect(escapePlain(MARKDOWN_ANSWER).startsWith(streamedText)).toBe(true);
    expect(streamedText.length).toBeGreaterThan(escapePlain(MARKDOWN_ANSWER).length / 2);
    expect(answer!.stream!.streaming).toBe(false);
    expect(callsIn(channel, 'chat.stopStream').filter((c) => c.params.ts === answer!.ts)).toHaveLength(1);

    // The final state: the formatted answer (bold as mrkdwn, <, >, & escaped), put in once.
    expect(answer!.text).toBe(formatted(MARKDOWN_ANSWER));
    expect(answer!.text).not.toContain('**');
    expect(answer!.edits).toEqual([formatted(MARKDOWN_ANSWER)]);
    expect(answer!.deleted).toBe(false);
    expect(callsIn(channel, 'chat.postMessage').filter((c) => c.params.unfurl_links === undefined)).toHaveLength(0);

    const writes = writesOf(channel, answer!.ts);
    expect(writes.map((c) => c.method)).toEqual(['chat.startStream', ...writes.slice(1, -2).map(() => 'chat.appendStream'), 'chat.stopStream', 'chat.update']);
    expect(writes.every((c) => c.status === 200 && c.error === undefined)).toBe(true);
    expectPaced(writes);
  }, 40_000);

  /** Every write of the answer after each 429 waits out that 429's Retry-After. */
  function expectRetryAfterHonoured(writes: Call[], limited: Call[], retryAfterMs: number): void {
    for (const l of limited)
      for (const c of writes.filter((w) => w.at > l.at)) expect(c.at - l.at, `${c.method} after the 429`).toBeGreaterThanOrEqual(retryAfterMs - SLACK);
  }

  it('a 429 mid-stream pauses the stream for its Retry-After, then the stream goes on with all the text; the final text is exact, once', async () => {
    const channel = 'C0STREAM3';
    // The first append is limited for 2 s; the model writes for 4.5 s, so the stream goes on after the pause.
    slack.fail('chat.appendStream', { status: 429, retryAfter: 2 });
    stack.fake.script([{ content: ANSWER, chunks: 10, chunkDelayMs: 500 }]);
    const thread = await mention(channel, 'long answer please');
    await ended(channel, thread, 40_000);
    await sleep(200);

    const messages = answersIn(channel, thread);
    expect(messages).toHaveLength(1);
    const [answer] = messages;
    const writes = writesOf(channel, answer!.ts);
    const limited = writes.filter((c) => c.status === 429);
    expect(limited.map((c) => c.method)).toEqual(['chat.appendStream']);
    const appendedAfter = writes.filter((c) => c.method === 'chat.appendStream' && c.at > limited[0]!.at && c.status === 200);
    expect(appendedAfter.length).toBeGreaterThan(0);
    expectRetryAfterHonoured(writes, limited, 2_000);
    // The text the limited append carried is not lost: the next append brings it with what came after, append-only.
    expect(String(appendedAfter[0]!.params.markdown_text).startsWith(String(limited[0]!.params.markdown_text))).toBe(true);
    expect(escapePlain(ANSWER).startsWith(answer!.stream!.chunks.join(''))).toBe(true);
    expect(answer!.text).toBe(formatted(ANSWER));
    expect(answer!.edits).toEqual([formatted(ANSWER)]);
  }, 50_000);

  it('a 429 near the end of the answer: the final delivery waits out its Retry-After too; the final text is exact, once', async () => {
    const channel = 'C0STREAM7';
    // The second append (≈ 2 s in) is limited for 3 s; the model is done at ≈ 3.5 s, inside the pause.
    slack.fail('chat.appendStream', { pass: true }, { status: 429, retryAfter: 3 });
    stack.fake.script([{ content: ANSWER, chunks: 8, chunkDelayMs: 500 }]);
    const thread = await mention(channel, 'long answer please, limited late');
    await ended(channel, thread, 40_000);
    await sleep(200);

    const messages = answersIn(channel, thread);
    expect(messages).toHaveLength(1);
    const [answer] = messages;
    const writes = writesOf(channel, answer!.ts);
    const limited = writes.filter((c) => c.status === 429);
    expect(limited.map((c) => c.method)).toEqual(['chat.appendStream']);
    const after = writes.filter((c) => c.at > limited[0]!.at);
    expect(after.map((c) => c.method)).toEqual(['chat.stopStream', 'chat.update']);
    expectRetryAfterHonoured(writes, limited, 3_000);
    expect(answer!.text).toBe(formatted(ANSWER));
    expect(answer!.edits).toEqual([formatted(ANSWER)]);
  }, 50_000);

  it('a run that fails after text was streamed keeps that text, then the incomplete mark and the honest line, in the same message', async () => {
    const channel = 'C0STREAM2';
    stack.fake.script([{ content: ANSWER, chunks: 10, chunkDelayMs: 400, breakAfterChunks: 2 }, { status: 500 }, { status: 500 }]);
    const thread = await mention(channel, 'long answer please, failing');
    await ended(channel, thread, 60_000);
    await sleep(200);

    const messages = answersIn(channel, thread);
    expect(messages).toHaveLength(1);
    const [answer] = messages;
    expect(answer!.stream).toBeDefined();
    const streamedText = answer!.stream!.chunks.join('');
    expect(streamedText.length).toBeGreaterThan(0);
    expect(ANSWER.startsWith(streamedText)).toBe(true);
    // The final text: what was streamed (up to where the model stopped), the mark, the honest line — formatted as post would.
    const [shown, rest] = answer!.text.split(' …\n\n');
    expect(shown!.length).toBeGreaterThan(0);
    expect(ANSWER.startsWith(shown!)).toBe(true);
    expect(shown!.length).toBeGreaterThanOrEqual(streamedText.trimEnd().length);
    expect(answer!.text).toBe(formatted(`${shown!} …\n\n${INCOMPLETE_MARK}\n\n${MODEL_FAILING}`));
    expect(rest).toContain('(incomplete: the answer stops here)');
    expect(rest!.endsWith(`\n\n${MODEL_FAILING}`)).toBe(true);
    expect(answer!.edits).toHaveLength(1);
    expect(stack.fake.requests.filter((r) => JSON.stringify(r.body.messages).includes('long answer please, failing')).length).toBe(3);
    expect(slack.reactions.get(`${channel}:${thread}`)).toEqual(['warning']);
  }, 70_000);

  it('a short answer is not streamed: it is posted once, as before', async () => {
    const channel = 'C0STREAM5';
    stack.fake.script([{ content: 'Short and **sweet**.' }]);
    const thread = await mention(channel, 'hi');
    await ended(channel, thread, 20_000);
    await sleep(200);
    const messages = answersIn(channel, thread);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.stream).toBeUndefined();
    expect(messages[0]!.text).toBe(formatted('Short and **sweet**.'));
    expect(messages[0]!.edits).toEqual([]);
    expect(writesOf(channel, messages[0]!.ts).map((c) => c.method)).toEqual(['chat.postMessage']);
    expect(callsIn(channel, 'chat.startStream')).toHaveLength(0);
  }, 30_000);

  /** The answer streamed by chat.update of one posted message: growing, marked, escaped prefixes of the answer, then the exact formatted answer once. */
  function expectStreamedByUpdate(channel: string, thread: string, markdown: string): void {
    const messages = answersIn(channel, thread);
    expect(messages).toHaveLength(1);
    const [answer] = messages;
    expect(answer!.stream).toBeUndefined();
    expect(answer!.deleted).toBe(false);
    // A refused chat.startStream wrote nothing (it is checked by the caller).
    const writes = writesOf(channel, answer!.ts).filter((c) => c.error !== 'unknown_method');
    expect(writes[0]!.method).toBe('chat.postMessage');
    expect(writes.slice(1).every((c) => c.method === 'chat.update')).toBe(true);
    expect(writes.every((c) => c.status === 200 && c.error === undefined)).toBe(true);
    // What the message showed, write by write: the posted text, then each update.
    const texts = [String(writes[0]!.params.text), ...answer!.edits];
    expect(texts.length).toBeGreaterThanOrEqual(4);
    const live = texts.slice(0, -1);
    for (const t of live) {
      expect(t.endsWith(STILL_WRITING)).toBe(true);
      expect(escapePlain(markdown).startsWith(t.slice(0, -STILL_WRITING.length))).toBe(true);
    }
    for (let i = 1; i < live.length; i++) expect(live[i]!.length).toBeGreaterThan(live[i - 1]!.length);
    expect(texts.at(-1)).toBe(formatted(markdown));
    expect(answer!.text).toBe(formatted(markdown));
    expect(answer!.edits.filter((e) => e === formatted(markdown))).toHaveLength(1);
    expectPaced(writes);
  }

  it('a channel mention without a team id streams by chat.update of one message (no native stream), final text exact, once', async () => {
    const channel = 'C0STREAM6';
    stack.fake.script([{ content: MARKDOWN_ANSWER, chunks: 8, chunkDelayMs: 500 }]);
    const thread = await mention(channel, 'long answer, no team', { team: null });
    await ended(channel, thread, 30_000);
    await sleep(200);
    expect(callsIn(channel, 'chat.startStream')).toHaveLength(0);
    expectStreamedByUpdate(channel, thread, MARKDOWN_ANSWER);
  }, 40_000);

  // Last: unknown_method tells the worker Slack has no streaming at all, for every conversation after it.
  it('where Slack has no native streaming (chat.startStream: unknown_method) the answer streams by chat.update of the same message; nothing lost or repeated', async () => {
    const channel = 'C0STREAM4';
    slack.fail('chat.startStream', { error: 'unknown_method' });
    stack.fake.script([{ content: MARKDOWN_ANSWER, chunks: 8, chunkDelayMs: 500 }]);
    const thread = await mention(channel, 'long answer, old Slack', { thread: nextTs() });
    await ended(channel, thread, 30_000);
    await sleep(200);
    const refused = callsIn(channel, 'chat.startStream');
    expect(refused.map((c) => c.error)).toEqual(['unknown_method']);
    expect(callsIn(channel, 'chat.appendStream')).toHaveLength(0);
    expectStreamedByUpdate(channel, thread, MARKDOWN_ANSWER);
    // The refused start counts as a write of the conversation: the post that replaces it waits for the next turn.
    const post = writesOf(channel, answersIn(channel, thread)[0]!.ts).find((c) => c.method === 'chat.postMessage')!;
    expect(post.at - refused[0]!.at).toBeGreaterThanOrEqual(STREAM_INTERVAL_MS - SLACK);
  }, 40_000);

  it('every write to the conversation — the status message and its edits, the streamed messages, the final text and the status removal — waits for its turn', async () => {
    const channel = 'C0PACED';
    stack.fake.script([
      { content: 'Let me look at the files.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }] },
      { content: 'And once more, quickly.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }], delayMs: 200 },
      { content: LONG_ANSWER, chunks: 10, chunkDelayMs: 300, delayMs: 200 },
    ]);
    const thread = await mention(channel, 'look twice, then write a very long answer', { thread: nextTs(), team: null });
    await ended(channel, thread, 60_000);
    await sleep(200);

    const writes = slack.calls.filter((c) => c.params.channel === channel && MESSAGE_WRITES.has(c.method));
    // A status message was posted, edited and removed, and the answer took more than one message.
    expect(new Set(writes.map((c) => c.method))).toEqual(new Set(['chat.postMessage', 'chat.update', 'chat.delete']));
    expect(visibleAnswers(channel, thread).length).toBeGreaterThanOrEqual(2);
    const gaps = writes.slice(1).map((c, i) => c.at - writes[i]!.at);
    console.log(`slack: smallest gap between writes to one conversation ${Math.min(...gaps)} ms over ${writes.length} writes`);
    expectPaced(writes);
  }, 90_000);
});

/** Every Web API method that writes a message of a conversation. */
const MESSAGE_WRITES = new Set([
  'chat.postMessage',
  'chat.update',
  'chat.delete',
  'chat.startStream',
  'chat.appendStream',
  'chat.stopStream',
  'chat.postEphemeral',
  'files.completeUploadExternal',
]);
const LONG_ANSWER = Array.from({ length: 60 }, (_, i) => `Paragraph ${i + 1}: a long streamed answer that needs more than one Slack message to show.`).join(
  '\n\n',
);
