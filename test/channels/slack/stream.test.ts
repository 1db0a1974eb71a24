import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { createLogger } from '../../../src/log.js';
import { SlackOutbound } from '../../../src/channels/slack/outbound.js';
import { SlackRateLimited } from '../../../src/channels/slack/errors.js';
import { STILL_WRITING, STREAM_INTERVAL_MS, STREAM_SEGMENT_LIMIT } from '../../../src/channels/slack/stream.js';
import { engagedThreadKey } from '../../../src/channels/slack/ids.js';
import { memoryLedger } from '../../../src/channels/kit/pieces.js';
import type { InboundMessage, StreamShown } from '../../../src/channels/types.js';
import { BOT_TOKEN, TEAM_ID, startFakeSlack, type FakeMessage, type FakeSlack } from '../../fakes/slack-server.js';
import { dropPrefix, testRedis, uniquePrefix } from '../../helpers/redis.js';

const log = createLogger(process.env.TEST_LOG ? 'debug' : 'silent');
const NOTHING: StreamShown = { ids: [], texts: [] };
const THREAD = '1700000000.000100';

/** A mention in a channel thread; `team` as the inbound half would carry it for a native stream's recipient. */
function mention(channel = 'C0CHAN', team: string | null = TEAM_ID): InboundMessage {
  return {
    v: 1,
    id: `${channel}:${THREAD}`,
    platform: 'slack',
    conversation: channel,
    thread: THREAD,
    sender: { id: 'U0ADA' },
    text: 'hi',
    attachments: [],
    eventId: `${channel}:${THREAD}`,
    receivedAt: 0,
    replyTo: THREAD,
    ...(team !== null && { meta: { team } }),
  };
}

/** Paragraphs of words: a long answer with Markdown in it. */
function paragraphs(n: number, from = 1): string {
  return Array.from({ length: n }, (_, i) => `Paragraph ${from + i}: **bold** ${'words '.repeat(60).trim()}`).join('\n\n');
}

const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

describe('slack streamed answers (fake Slack)', () => {
  let slack: FakeSlack;
  let redis: Redis;
  let prefix: string;
  let out: SlackOutbound;
  /** Moves the adapter's pacer clock on (a delivery tried again minutes later). */
  let later = 0;

  beforeEach(async () => {
    later = 0;
    slack = await startFakeSlack();
    redis = testRedis();
    prefix = uniquePrefix('slack-stream');
    // Native streams (chat.startStream) are used only with LINK_PREVIEWS=1 (they take no unfurl arguments).
    out = new SlackOutbound({ token: BOT_TOKEN, apiUrl: slack.apiUrl, redis, prefix, log, linkPreviews: true, now: () => Date.now() + later });
  });
  afterEach(async () => {
    await slack.close();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  /** What `post` sends for this answer, from an adapter of its own against a Slack of its own. */
  async function posted(to: InboundMessage, text: string): Promise<string[]> {
    const other = await startFakeSlack();
    try {
      const poster = new SlackOutbound({ token: BOT_TOKEN, apiUrl: other.apiUrl, redis, prefix, log, linkPreviews: true });
      await poster.post(to, text, 'answer');
      return other.messages.map((m) => m.text);
    } finally {
      await other.close();
    }
  }

  const visible = (): FakeMessage[] => slack.messages.filter((m) => !m.deleted);
  const byTs = (ts: string) => slack.messages.find((m) => m.ts === ts)!;
  const count = (method: string) => slack.callsOf(method, true).length;

  /** Streams `texts` one call each, as the answer stream does; returns the last shown. */
  async function streamAll(to: InboundMessage, texts: string[], shown: StreamShown = NOTHING): Promise<StreamShown> {
    for (const t of texts) shown = await out.streamAnswer(to, t, shown);
    return shown;
  }

  it('paces a conversation at one write a second (chat.update is Tier 3)', () => {
    expect(out.streamIntervalMs(mention())).toBe(1_000);
  });

  it('streams a growing answer into one native stream in the thread and finishes it, once, exactly as post would', async () => {
    const to = mention();
    const steps = [
      'Here is',
      'Here is **the** answer',
      'Here is **the** answer; do not ping <!channel> & co.',
      'Here is **the** answer; do not ping <!channel> & co.\n\n- one\n- two',
    ];
    const shown = await streamAll(to, steps);

    expect(slack.callsOf('chat.startStream')).toHaveLength(1);
    expect(slack.callsOf('chat.startStream')[0]!.params).toMatchObject({
      channel: 'C0CHAN',
      thread_ts: THREAD,
      recipient_user_id: 'U0ADA',
      recipient_team_id: TEAM_ID,
    });
    expect(slack.messages).toHaveLength(1);
    const [message] = slack.messages;
    // Append-only: each call brought only the new text, escaped so nothing pings.
    expect(message!.stream!.chunks).toEqual(['Here is', ' **the** answer', '; do not ping &lt;!channel&gt; &amp; co.', '\n\n- one\n- two']);
    expect(message!.text).toBe(esc(steps.at(-1)!));
    expect(shown).toEqual({ ids: [message!.ts], texts: [esc(steps.at(-1)!)] });
    expect(count('chat.postMessage')).toBe(0);

    const final = `${steps.at(-1)!}\n- three`;
    const ids = await out.finishStream(to, shown, final, memoryLedger());
    expect(ids).toEqual([message!.ts]);
    expect(slack.callsOf('chat.stopStream')).toHaveLength(1);
    expect(message!.stream!.streaming).toBe(false);
    expect(visible().map((m) => m.text)).toEqual(await posted(to, final));
    expect(message!.edits).toHaveLength(1);
    expect(count('chat.postMessage')).toBe(0);
    expect(await redis.exists(engagedThreadKey(prefix, 'C0CHAN', THREAD))).toBe(1);
  });

  it('continues past the length limit in a new message, in order; earlier messages stop changing', async () => {
    const to = mention();
    const text = paragraphs(24);
    const steps = Array.from({ length: 12 }, (_, i) => text.slice(0, Math.ceil((text.length * (i + 1)) / 12)));
    let shown = NOTHING;
    const frozen = new Map<string, string>();
    for (const step of steps) {
      shown = await out.streamAnswer(to, step, shown);
      // Every message but the last is sealed: its stream stopped, its text never changes again.
      for (const id of shown.ids.slice(0, -1)) {
        expect(byTs(id).stream!.streaming).toBe(false);
        if (frozen.has(id)) expect(byTs(id).text).toBe(frozen.get(id));
        frozen.set(id, byTs(id).text);
      }
      // Shown so far: the whole text, in order (less trailing blank text not shown yet).
      const joined = shown.texts.join('');
      expect(esc(step).startsWith(joined) && !esc(step).slice(joined.length).trim()).toBe(true);
      expect(shown.texts.every((t) => t.length <= STREAM_SEGMENT_LIMIT)).toBe(true);
      expect(shown.ids.map((id) => byTs(id).text)).toEqual(shown.texts);
    }
    expect(shown.ids.length).toBeGreaterThanOrEqual(3);
    expect(shown.texts.join('')).toBe(esc(text));
    expect(visible().map((m) => m.ts)).toEqual(shown.ids);
    expect(visible().every((m) => m.thread_ts === THREAD)).toBe(true);

    const expected = await posted(to, text);
    const ids = await out.finishStream(to, shown, text);
    expect(visible().map((m) => m.text)).toEqual(expected);
    expect(visible().map((m) => m.ts)).toEqual(ids);
    // The streamed messages were edited into the answer (more pieces posted, fewer removed, as needed): never a second copy.
    expect(ids.slice(0, Math.min(ids.length, shown.ids.length))).toEqual(shown.ids.slice(0, ids.length));
    expect(count('chat.postMessage')).toBe(Math.max(0, expected.length - shown.ids.length));
    expect(slack.messages.filter((m) => m.deleted)).toHaveLength(Math.max(0, shown.ids.length - expected.length));
  });

  it('finishStream posts the pieces past the streamed messages and removes the streamed messages left over', async () => {
    const to = mention();
    // One streamed message, a final answer of three pieces: piece 1 edits it, pieces 2 and 3 are posted after it.
    const short = await out.streamAnswer(to, 'Thinking about it', NOTHING);
    const long = paragraphs(30);
    const expectedLong = await posted(to, long);
    expect(expectedLong.length).toBeGreaterThanOrEqual(3);
    const ids = await out.finishStream(to, short, long);
    expect(ids[0]).toBe(short.ids[0]);
    expect(visible().map((m) => m.ts)).toEqual(ids);
    expect(visible().map((m) => m.text)).toEqual(expectedLong);
    expect(count('chat.postMessage')).toBe(expectedLong.length - 1);

    // Three streamed messages, a final answer of one piece: the first is edited, the other two deleted.
    const to2 = mention('C0OTHER');
    const streamed = await out.streamAnswer(to2, paragraphs(24), NOTHING);
    expect(streamed.ids.length).toBeGreaterThanOrEqual(3);
    const ids2 = await out.finishStream(to2, streamed, 'In short: yes.');
    expect(ids2).toEqual([streamed.ids[0]]);
    expect(slack.messages.filter((m) => m.channel === 'C0OTHER' && !m.deleted).map((m) => m.text)).toEqual(await posted(to2, 'In short: yes.'));
    expect(streamed.ids.slice(1).every((id) => byTs(id).deleted)).toBe(true);
    // Each stream was stopped before its message was edited or deleted (chat.update would answer streaming_state_conflict).
    expect(slack.calls.filter((c) => c.error === 'streaming_state_conflict')).toHaveLength(0);
  });

  it('a 429 on chat.appendStream is not waited for; after its Retry-After the next write shows the newer text', async () => {
    const to = mention();
    let shown = await out.streamAnswer(to, 'First words', NOTHING);
    slack.fail('chat.appendStream', { status: 429, retryAfter: 1 });
    // The answer stream keeps the interval between writes.
    await sleep(STREAM_INTERVAL_MS);
    const started = Date.now();
    const after429 = await out.streamAnswer(to, 'First words, then more', shown);
    expect(Date.now() - started).toBeLessThan(500);
    expect(after429).toEqual(shown);
    // Within the Retry-After nothing is sent at all.
    const calls = slack.calls.length;
    expect(await out.streamAnswer(to, 'First words, then more and more', shown)).toEqual(shown);
    expect(slack.calls.length).toBe(calls);
    await sleep(1_050);
    shown = await out.streamAnswer(to, 'First words, then more and more', shown);
    expect(shown.texts).toEqual(['First words, then more and more']);
    expect(slack.messages[0]!.stream!.chunks).toEqual(['First words', ', then more and more']);
    await out.finishStream(to, shown, 'First words, then more and more.');
    expect(visible().map((m) => m.text)).toEqual(await posted(to, 'First words, then more and more.'));
  });

  it('a 429 on chat.update (the plain fallback) is not waited for either', async () => {
    const to = mention('C0CHAN', null);
    let shown = await out.streamAnswer(to, 'First words', NOTHING);
    slack.fail('chat.update', { status: 429, retryAfter: 1 });
    await sleep(STREAM_INTERVAL_MS);
    const started = Date.now();
    expect(await out.streamAnswer(to, 'First words, then more', shown)).toEqual(shown);
    expect(Date.now() - started).toBeLessThan(500);
    await sleep(1_050);
    shown = await out.streamAnswer(to, 'First words, then more and more', shown);
    expect(slack.messages[0]!.text).toBe(`First words, then more and more${STILL_WRITING}`);
    await out.finishStream(to, shown, 'First words, then more and more.');
    expect(visible().map((m) => m.text)).toEqual(await posted(to, 'First words, then more and more.'));
  });

  it('a failure is thrown, except after a message was posted in the same call: then what is shown is returned', async () => {
    const to = mention();
    slack.fail('chat.startStream', { error: 'not_in_channel' });
    await expect(out.streamAnswer(to, 'Hello', NOTHING)).rejects.toMatchObject({ name: 'SlackRefused', code: 'not_in_channel' });
    expect(slack.messages).toHaveLength(0);

    // The first message is posted (and sealed), the second cannot start: the caller still learns of the first.
    const text = paragraphs(12);
    slack.fail('chat.startStream', { pass: true }, { error: 'internal_error' });
    let shown = await out.streamAnswer(to, text, NOTHING);
    expect(shown.ids).toHaveLength(1);
    expect(slack.messages[0]!.stream!.streaming).toBe(false);
    shown = await out.streamAnswer(to, text, shown);
    expect(shown.ids).toHaveLength(2);
    expect(shown.texts.join('')).toBe(esc(text));
    await out.finishStream(to, shown, text);
    expect(visible().map((m) => m.text)).toEqual(await posted(to, text));
  });

  it('finishStream again with the same ledger (a resumed delivery) posts nothing twice', async () => {
    const to = mention();
    const shown = await out.streamAnswer(to, 'Let me write this up.', NOTHING);
    const text = paragraphs(30);
    const expected = await posted(to, text);
    const ledger = memoryLedger();
    // The second posted piece meets a 429 longer than we wait: the delivery fails after piece 2 (the edit and one post).
    slack.fail('chat.postMessage', { pass: true }, { status: 429, retryAfter: 120 });
    await expect(out.finishStream(to, shown, text, ledger)).rejects.toBeInstanceOf(SlackRateLimited);
    // The delivery is tried again once the Retry-After has passed.
    later += 120_000;
    const ids = await out.finishStream(to, shown, text, ledger);
    const again = await out.finishStream(to, shown, text, ledger);
    expect(again).toEqual(ids);
    expect(visible().map((m) => m.text)).toEqual(expected);
    expect(visible().map((m) => m.ts)).toEqual(ids);
    expect(slack.callsOf('chat.postMessage')).toHaveLength(expected.length - 1);
    expect(ids[0]).toBe(shown.ids[0]);
  });

  it('a shorter, different text (a retried model call) replaces the streamed text in place, and fewer messages remove the rest', async () => {
    const to = mention();
    let shown = await streamAll(to, ['The answer is forty', 'The answer is forty-two, because']);
    // The retried call writes something else: the stream cannot take it back, so the stream ends and the whole text is put in.
    shown = await out.streamAnswer(to, 'Well, it depends', shown);
    const [message] = slack.messages;
    expect(slack.callsOf('chat.stopStream')).toHaveLength(1);
    expect(message!.text).toBe(`Well, it depends${STILL_WRITING}`);
    expect(shown.texts).toEqual([`Well, it depends${STILL_WRITING}`]);
    shown = await out.streamAnswer(to, 'Well, it depends on <the> question', shown);
    expect(message!.edits).toEqual([`Well, it depends${STILL_WRITING}`, `Well, it depends on &lt;the&gt; question${STILL_WRITING}`]);
    expect(slack.callsOf('chat.startStream')).toHaveLength(1);
    await out.finishStream(to, shown, 'Well, it depends on <the> question.');
    expect(visible().map((m) => m.text)).toEqual(await posted(to, 'Well, it depends on <the> question.'));

    // Across messages: three streamed, then a retry writes one short text. The first shows it, the others go.
    const to2 = mention('C0OTHER');
    let long = await out.streamAnswer(to2, paragraphs(24), NOTHING);
    expect(long.ids.length).toBeGreaterThanOrEqual(3);
    long = await out.streamAnswer(to2, 'Paragraph 1: a different start', long);
    expect(long.ids).toHaveLength(1);
    expect(long.texts).toEqual([`Paragraph 1: a different start${STILL_WRITING}`]);
    expect(slack.messages.filter((m) => m.channel === 'C0OTHER' && !m.deleted).map((m) => m.text)).toEqual(long.texts);
  });

  describe('fallback to chat.update', () => {
    it('chat.startStream answers unknown_method: the answer is posted and rewritten whole, nothing lost or repeated', async () => {
      const to = mention();
      slack.fail('chat.startStream', { error: 'unknown_method' });
      const steps = ['Step one', 'Step one, step two', 'Step one, step two, <@U0EVE> three'];
      const shown = await streamAll(to, steps);
      expect(slack.callsOf('chat.startStream', true)).toHaveLength(1);
      expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
      const [message] = slack.messages;
      expect(message!.thread_ts).toBe(THREAD);
      expect([message!.params.text, ...message!.edits]).toEqual(steps.map((s) => `${esc(s)}${STILL_WRITING}`));
      // The token cannot stream: the next answer does not ask again.
      await out.streamAnswer(mention('C0OTHER'), 'Elsewhere', NOTHING);
      expect(slack.callsOf('chat.startStream', true)).toHaveLength(1);

      const final = 'Step one, step two, <@U0EVE> three. Done.';
      await out.finishStream(to, shown, final);
      expect(slack.messages.filter((m) => m.channel === 'C0CHAN' && !m.deleted).map((m) => m.text)).toEqual(await posted(to, final));
      expect(count('chat.postMessage')).toBe(2);
    });

    it('a stream Slack ended (message_not_in_streaming_state) goes on with chat.update of the same message', async () => {
      const to = mention();
      let shown = await streamAll(to, ['Alpha', 'Alpha beta']);
      slack.expireStreams();
      shown = await out.streamAnswer(to, 'Alpha beta gamma', shown);
      const [message] = slack.messages;
      expect(slack.callsOf('chat.appendStream', true).map((c) => c.error)).toEqual([undefined, 'message_not_in_streaming_state']);
      expect(message!.stream!.chunks).toEqual(['Alpha', ' beta']);
      expect(message!.text).toBe(`Alpha beta gamma${STILL_WRITING}`);
      shown = await out.streamAnswer(to, 'Alpha beta gamma delta', shown);
      expect(message!.edits).toEqual([`Alpha beta gamma${STILL_WRITING}`, `Alpha beta gamma delta${STILL_WRITING}`]);
      expect(count('chat.appendStream')).toBe(2);
      await out.finishStream(to, shown, 'Alpha beta gamma delta.');
      expect(visible().map((m) => m.text)).toEqual(await posted(to, 'Alpha beta gamma delta.'));
      expect(slack.messages).toHaveLength(1);
    });

    it('a channel answer without the recipient team streams with chat.update; a DM thread streams natively without recipients', async () => {
      const to = mention('C0CHAN', null);
      const shown = await streamAll(to, ['One', 'One two']);
      expect(count('chat.startStream')).toBe(0);
      expect(slack.messages[0]!.text).toBe(`One two${STILL_WRITING}`);
      await out.finishStream(to, shown, 'One two three');
      expect(visible().map((m) => m.text)).toEqual(['One two three']);

      const dm = mention('D0DM', null);
      const dmShown = await streamAll(dm, ['Hi', 'Hi there']);
      const start = slack.callsOf('chat.startStream')[0]!;
      expect(start.params).toMatchObject({ channel: 'D0DM', thread_ts: THREAD });
      expect(start.params.recipient_user_id).toBeUndefined();
      await out.finishStream(dm, dmShown, 'Hi there!');
      expect(slack.messages.filter((m) => m.channel === 'D0DM').map((m) => m.text)).toEqual(['Hi there!']);
    });

    it('an /ask answer (no thread) streams as a plain message led by the asked line and ends as post would', async () => {
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
      const shown = await streamAll(ask, ['Four', 'Four, since']);
      expect(count('chat.startStream')).toBe(0);
      expect(slack.messages[0]!.thread_ts).toBeUndefined();
      expect(shown.texts).toEqual([`<@U0ADA> asked: what is &lt;2&gt;?\n\nFour, since${STILL_WRITING}`]);
      await out.finishStream(ask, shown, 'Four, since 2 + 2 = 4.');
      expect(visible().map((m) => m.text)).toEqual(await posted(ask, 'Four, since 2 + 2 = 4.'));
    });

    it('a run resumed by another worker continues a message still streaming: its stream is stopped before chat.update', async () => {
      const to = mention();
      const shown = await streamAll(to, ['Partial answer']);
      // A fresh adapter knows nothing of the stream (another worker took the turn over).
      const other = new SlackOutbound({ token: BOT_TOKEN, apiUrl: slack.apiUrl, redis, prefix, log, linkPreviews: true });
      const next = await other.streamAnswer(to, 'Partial answer, continued', shown);
      expect(slack.calls.map((c) => `${c.method}${c.error ? ` ${c.error}` : ''}`)).toEqual([
        'chat.startStream',
        'chat.update streaming_state_conflict',
        'chat.stopStream',
        'chat.update',
      ]);
      expect(next.texts).toEqual([`Partial answer, continued${STILL_WRITING}`]);
      await other.finishStream(to, next, 'Partial answer, continued.');
      expect(visible().map((m) => m.text)).toEqual(await posted(to, 'Partial answer, continued.'));
    });
  });
});
