import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normaliseMessage } from '../../../src/channels/discord/inbound.js';
import { DiscordOutbound } from '../../../src/channels/discord/outbound.js';
import { DiscordRest } from '../../../src/channels/discord/rest.js';
import { STREAM_INTERVAL_MS } from '../../../src/channels/discord/pacing.js';
import { WRITING_MARK } from '../../../src/channels/discord/stream-layout.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { INCOMPLETE_MARK } from '../../../src/run/delivery/reply.js';
import { createLogger } from '../../../src/log.js';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction, type FakeMessage, type RecordedRequest } from '../../fakes/discord-server.js';
import { waitFor } from '../../helpers/processes.js';
import { startStack, type Stack } from '../../helpers/stack.js';

/**
 * Streamed answers (STREAM_ANSWERS, the default) on Discord through the real roles: the real
 * discord.js gateway client and the worker's REST adapter against the fake Discord, real Redis,
 * and the fake model streaming its answer in timed chunks. What is asserted is what the fake
 * Discord recorded: the requests, and every content each message had.
 */

let fake: FakeDiscord;
let stack: Stack;

beforeAll(async () => {
  fake = await startFakeDiscord();
  stack = await startStack('dc-stream', fake.env({ AGENT_MODEL_RETRIES: '2' }));
  const channel = stack.gateway.channels.find((c) => c.name === 'discord')!;
  await waitFor('the Discord gateway to be ready', () => channel.health().connected, 15_000);
}, 30_000);
afterAll(async () => {
  await stack?.close();
  await fake?.close();
});

const ANSWER = Array.from({ length: 12 }, (_, i) => `Paragraph ${i + 1}: the streamed answer grows while the model writes it, one piece at a time.`).join(
  '\n\n',
);
/** Markdown Discord lacks (a level-4 heading, a table): what `post` rewrites. */
const FORMATTED = `#### Summary\n\n${ANSWER}\n\n| step | who |\n|------|-----|\n| read | me  |`;
const FORMATTED_SHOWN = `**Summary**\n\n${ANSWER}\n\n\`\`\`\n| step | who |\n|------|-----|\n| read | me  |\n\`\`\``;
const HONEST_MODEL_FAILED = 'I could not get an answer from the model (it kept failing). Please try again in a moment.';

/** Prose of about `n` characters in paragraphs, each sentence numbered so order can be checked. */
function prose(n: number): string {
  const out: string[] = [];
  let len = 0;
  for (let k = 0; len < n; k++) {
    const sentence = `s${k} is one more sentence of the long answer.`;
    out.push(k > 0 && k % 6 === 0 ? `\n\n${sentence}` : sentence);
    len += sentence.length + 1;
  }
  return out.join(' ').replace(/ \n\n/g, '\n\n').slice(0, n).trimEnd();
}

/** Where the fake was before a case: what the case made is what came after. */
interface Mark {
  messages: number;
  requests: number;
  last: string | null;
}

async function mark(channel: string): Promise<Mark> {
  return { messages: fake.messages.length, requests: fake.requests.length, last: await stack.redis.get(stack.keys.last(session(channel))) };
}

const session = (channel: string) => sessionKeyOf({ platform: 'discord', conversation: channel });

/** The run committed (a new `last`) and its reply was delivered (the outbox is gone). */
async function ended(channel: string, before: Mark, ms: number): Promise<void> {
  await waitFor(
    'the run to end',
    async () => {
      const last = await stack.redis.get(stack.keys.last(session(channel)));
      return last !== null && last !== before.last && (await stack.redis.exists(stack.keys.outbox(session(channel)))) === 0;
    },
    ms,
  );
  await sleep(200);
}

/** The bot's messages (live or deleted) made since the mark, oldest first. */
const madeSince = (m: Mark, channel: string) =>
  fake.messages.slice(m.messages).filter((x) => x.channel_id === channel && x.author.id === fake.ids.app && x.via !== 'user');
const liveSince = (m: Mark, channel: string) => madeSince(m, channel).filter((x) => !x.deleted);
const requestsSince = (m: Mark) => fake.requests.slice(m.requests);

/** Message writes (posts and edits of message content) in a channel, or through an interaction's webhook. */
function channelWrites(m: Mark, channel: string): RecordedRequest[] {
  const post = new RegExp(`^/channels/${channel}/messages$`);
  const edit = new RegExp(`^/channels/${channel}/messages/\\d+$`);
  return requestsSince(m).filter((r) => (r.method === 'POST' && post.test(r.path)) || (r.method === 'PATCH' && edit.test(r.path)));
}
function webhookWrites(m: Mark, ix: FakeInteraction): RecordedRequest[] {
  const base = `/webhooks/${fake.ids.app}/${ix.token}`;
  return requestsSince(m).filter((r) => (r.method === 'POST' && r.path === base) || (r.method === 'PATCH' && r.path.startsWith(`${base}/messages/`)));
}
/** The writes a streamed write made (it shows the "still writing" mark, or is a message it posted). */
const streamed = (writes: RecordedRequest[]) => writes.filter((r) => r.status === 200 && String(r.body?.content ?? '').endsWith(WRITING_MARK));

let references = 0;

/** What `post` sends for the same answer (a non-streamed answer), as the contents of its messages (posted in the DM, which no case uses). */
async function posted(text: string): Promise<string[]> {
  const out = new DiscordOutbound({ rest: new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl }), log: createLogger('silent'), downloadHosts: [] });
  const gate = normaliseMessage(
    {
      id: String(BigInt(fake.ids.dmAlice) + BigInt(++references)),
      channelId: fake.ids.dmAlice,
      author: { id: fake.ids.alice, name: 'Alice', bot: false },
      content: 'reference',
      system: false,
      webhook: false,
      mentionedUserIds: [],
      mentionedRoleIds: [],
      attachments: [],
      userNames: {},
    },
    { id: fake.ids.app },
    Date.now(),
  );
  if (!gate.ok) throw new Error('the reference message was not taken');
  const ids = await out.post(gate.message, text, 'answer');
  return ids.map((id) => fake.messages.find((x) => x.id === id)!.content);
}

/** Alice mentions the bot in a channel. */
const mention = (channel: string, words: string) => fake.userMessage({ channel, content: `<@${fake.ids.app}> ${words}` });

/** Each content of a message while it was streamed grows, shows the mark, and the last one is `final`. */
function expectGrowing(history: string[], final: string): void {
  const writes = history.slice(0, -1);
  expect(writes.length).toBeGreaterThanOrEqual(1);
  for (const w of writes) expect(w.endsWith(` ${WRITING_MARK}`)).toBe(true);
  for (let i = 1; i < writes.length; i++) expect(writes[i]!.length).toBeGreaterThan(writes[i - 1]!.length);
  // What was shown so far is the start of what the message ends up showing.
  for (const w of writes) expect(final.startsWith(w.slice(0, -` ${WRITING_MARK}`.length))).toBe(true);
  expect(history.at(-1)).toBe(final);
}

/**
 * Every write of one channel (status, streamed writes, the final edits, posts and deletes) is at
 * least STREAM_INTERVAL_MS apart, as the fake received them: the pacer lets a write go when its
 * turn comes, and its way to the fake takes a few ms, more on a loaded machine (TRANSIT_MS).
 */
const TRANSIT_MS = 50;
function expectPaced(writes: RecordedRequest[]): void {
  const gaps = writes.slice(1).map((r, i) => r.at - writes[i]!.at);
  const smallest = Math.min(...gaps);
  const at = gaps.indexOf(smallest);
  expect(smallest, `${writes[at]?.method} ${writes[at]?.path} → ${writes[at + 1]?.method} ${writes[at + 1]?.path}`).toBeGreaterThanOrEqual(
    STREAM_INTERVAL_MS - 15,
  );
}

/** Every request that writes to the channel's messages or through an interaction's webhook: posts, edits, deletes. */
function everyWrite(m: Mark, channel: string): RecordedRequest[] {
  const message = new RegExp(`^/channels/${channel}/messages(/\\d+)?$`);
  return requestsSince(m).filter((r) => r.method !== 'GET' && (message.test(r.path) || r.path.startsWith('/webhooks/')));
}

describe('Discord: STREAM_ANSWERS (the default) shows the answer in the messages that will carry it, as the model writes it', () => {
  it('a mention: one reply, edited with growing text ≥ 1.2 s apart, ending exactly as the non-streamed answer, once', async () => {
    const channel = fake.ids.general;
    const before = await mark(channel);
    stack.fake.script([{ content: FORMATTED, chunks: 8, chunkDelayMs: 500 }]);
    const asked = mention(channel, 'write a long answer');
    await ended(channel, before, 30_000);

    const expected = await posted(FORMATTED);
    expect(expected).toEqual([FORMATTED_SHOWN]);
    const made = madeSince(before, channel);
    expect(made).toHaveLength(1);
    const [answer] = made as [FakeMessage];
    expect(answer).toMatchObject({ via: 'channel', deleted: false, content: FORMATTED_SHOWN, message_reference: { message_id: asked.id } });
    expectGrowing(answer.history, FORMATTED_SHOWN);
    expect(answer.history.length).toBeGreaterThanOrEqual(3);

    const writes = channelWrites(before, channel);
    // One message posted; every other write edits it.
    expect(writes.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(writes.filter((r) => r.method === 'PATCH').every((r) => r.path.endsWith(`/${answer.id}`))).toBe(true);
    expect(writes.every((r) => r.status === 200)).toBe(true);
    expect(writes.at(-1)!.body.content).toBe(FORMATTED_SHOWN);
    expectPaced(writes);
    expect(streamed(writes).length).toBeGreaterThanOrEqual(2);
    // Nothing in the model's words pings anyone.
    expect(writes.every((r) => Array.isArray(r.body.allowed_mentions?.parse) && r.body.allowed_mentions.parse.length === 0)).toBe(true);
  }, 40_000);

  it('/ask: the deferred response is edited with growing text ≥ 1.2 s apart into the exact answer; nothing in the channel', async () => {
    const channel = fake.ids.random;
    const before = await mark(channel);
    stack.fake.script([{ content: FORMATTED, chunks: 8, chunkDelayMs: 500 }]);
    const ix = fake.slash({ name: 'ask', channel, prompt: 'write a long answer' });
    await ended(channel, before, 30_000);

    expect(ix.callbackType).toBe(5);
    const original = fake.messages.find((m) => m.id === ix.originalId)!;
    expect(original).toMatchObject({ via: 'original', deleted: false, content: FORMATTED_SHOWN });
    // The deferred "is thinking…" response, then the streamed writes, then the final answer.
    expect(original.history[0]).toBe('');
    expectGrowing(original.history.slice(1), FORMATTED_SHOWN);
    expect(original.history.length).toBeGreaterThanOrEqual(4);
    expect(ix.followups).toEqual([]);
    expect(liveSince(before, channel).map((m) => m.id)).toEqual([original.id]);
    expect(channelWrites(before, channel)).toEqual([]);

    const writes = webhookWrites(before, ix);
    expect(writes.every((r) => r.method === 'PATCH' && r.path.endsWith('/messages/@original') && r.status === 200)).toBe(true);
    expect(writes.at(-1)!.body.content).toBe(FORMATTED_SHOWN);
    expectPaced(writes);
    expect(streamed(writes).length).toBeGreaterThanOrEqual(2);
  }, 40_000);

  it('a run that fails after text was streamed keeps that text, marked incomplete, with the honest line', async () => {
    const channel = fake.ids.thread;
    const before = await mark(channel);
    stack.fake.script([{ content: ANSWER, chunks: 10, chunkDelayMs: 400, breakAfterChunks: 2 }, { status: 500 }, { status: 500 }]);
    const asked = mention(channel, 'long answer please, failing');
    await ended(channel, before, 60_000);

    expect(stack.fake.requests.filter((r) => JSON.stringify(r.body.messages).includes('long answer please, failing'))).toHaveLength(3);
    // The status message ("the model is busy; retrying") went once the reply was out; the streamed reply stays.
    const live = liveSince(before, channel);
    expect(live).toHaveLength(1);
    const [answer] = live as [FakeMessage];
    expect(answer.message_reference?.message_id).toBe(asked.id);
    const [shown, rest] = answer.content.split(' …\n\n');
    expect(shown!.length).toBeGreaterThanOrEqual(80);
    expect(ANSWER.startsWith(shown!)).toBe(true);
    expect(rest).toBe(`${INCOMPLETE_MARK}\n\n${HONEST_MODEL_FAILED}`);
    // It was the streamed message: its earlier contents were the streamed text, with the mark.
    const writing = answer.history.slice(0, -1);
    expect(writing.length).toBeGreaterThanOrEqual(1);
    for (const h of writing) expect(h.endsWith(` ${WRITING_MARK}`) && shown!.startsWith(h.slice(0, -2))).toBe(true);
    expect(channelWrites(before, channel).filter((r) => r.method === 'POST' && r.body.content.endsWith(WRITING_MARK))).toHaveLength(1);
    expect(
      madeSince(before, channel)
        .filter((m) => m.id !== answer.id)
        .every((m) => m.deleted && m.content.startsWith('• the model is busy')),
    ).toBe(true);
  }, 70_000);

  it('a 429 mid-stream holds the channel for its retry-after; the final text is still exact, and shown once', async () => {
    const channel = fake.ids.general;
    const before = await mark(channel);
    let armed = true;
    fake.fail({
      method: 'PATCH',
      path: new RegExp(`^/channels/${channel}/messages/\\d+$`),
      status: 429,
      retryAfter: 3,
      when: () => armed && ((armed = false), true),
    });
    stack.fake.script([{ content: ANSWER, chunks: 8, chunkDelayMs: 500 }]);
    const asked = mention(channel, 'long answer, rate limited');
    await ended(channel, before, 40_000);

    const writes = channelWrites(before, channel);
    const limited = writes.find((r) => r.status === 429)!;
    expect(limited).toBeDefined();
    const later = writes.filter((r) => r.seq > limited.seq);
    expect(later.length).toBeGreaterThan(0);
    for (const r of later) expect(r.at - limited.at).toBeGreaterThanOrEqual(3_000 - 15);
    const live = liveSince(before, channel);
    expect(live.map((m) => m.content)).toEqual(await posted(ANSWER));
    expect(live[0]!.message_reference?.message_id).toBe(asked.id);
    expect(madeSince(before, channel)).toHaveLength(1);
    expect(writes.filter((r) => r.method === 'POST')).toHaveLength(1);
  }, 50_000);

  it('a mention past 2,000 characters: the stream goes on in new messages, in order; the final ones are what post sends', async () => {
    const channel = fake.ids.random;
    const long = prose(5_000);
    const before = await mark(channel);
    stack.fake.script([{ content: long, chunks: 8, chunkDelayMs: 500 }]);
    const asked = mention(channel, 'a very long answer');
    await ended(channel, before, 40_000);

    const expected = await posted(long);
    expect(expected).toHaveLength(3);
    const made = madeSince(before, channel);
    expect(made.map((m) => m.content)).toEqual(expected);
    expect(made.every((m) => !m.deleted && m.via === 'channel')).toBe(true);
    // In order: made one after the other, the first one replying to the request.
    for (let i = 1; i < made.length; i++) expect(BigInt(made[i]!.id) > BigInt(made[i - 1]!.id)).toBe(true);
    expect(made[0]!.message_reference?.message_id).toBe(asked.id);
    expect(made.slice(1).every((m) => m.message_reference === undefined)).toBe(true);
    // More than one message was made while streaming, and each grew while it was the last one.
    const whileStreaming = made.filter((m) => m.history[0]!.endsWith(WRITING_MARK));
    expect(whileStreaming.length).toBeGreaterThanOrEqual(2);
    for (const m of made) {
      const growing = m.history.filter((h) => h.endsWith(` ${WRITING_MARK}`));
      for (let i = 1; i < growing.length; i++) expect(growing[i]!.length).toBeGreaterThan(growing[i - 1]!.length);
      // Once the text went past it, a message shows its final piece and stays so.
      const settled = m.history.findIndex((h) => !h.endsWith(` ${WRITING_MARK}`));
      expect(m.history.slice(settled).every((h) => h === m.content)).toBe(true);
    }
    const writes = channelWrites(before, channel);
    expect(writes.filter((r) => r.method === 'POST')).toHaveLength(3);
    expect(writes.every((r) => r.status === 200 && r.body.content.length <= 2_000)).toBe(true);
    // The streamed writes, in time order, show more and more of the answer.
    const at = streamed(writes).map(
      (r) => [made.findIndex((m) => (r.method === 'POST' ? m.nonce === r.body.nonce : r.path.endsWith(`/${m.id}`))), r.body.content.length] as const,
    );
    expect(at.every(([k]) => k >= 0)).toBe(true);
    for (let i = 1; i < at.length; i++) expect(at[i]![0] > at[i - 1]![0] || (at[i]![0] === at[i - 1]![0] && at[i]![1] > at[i - 1]![1])).toBe(true);
    expectPaced(writes);
  }, 50_000);

  it('/ask past 2,000 characters: the deferred response, then follow-ups, in order; the final ones are what post sends', async () => {
    const channel = fake.ids.thread;
    const long = prose(5_000);
    const before = await mark(channel);
    stack.fake.script([{ content: long, chunks: 8, chunkDelayMs: 500 }]);
    const ix = fake.slash({ name: 'ask', channel, prompt: 'a very long answer' });
    await ended(channel, before, 40_000);

    const expected = await posted(long);
    const ids = [ix.originalId!, ...ix.followups];
    const shown = ids.map((id) => fake.messages.find((m) => m.id === id)!);
    expect(shown.map((m) => m.content)).toEqual(expected);
    expect(shown.map((m) => m.via)).toEqual(['original', 'followup', 'followup']);
    expect(shown.every((m) => !m.deleted)).toBe(true);
    for (let i = 1; i < shown.length; i++) expect(BigInt(shown[i]!.id) > BigInt(shown[i - 1]!.id)).toBe(true);
    expect(liveSince(before, channel).map((m) => m.id)).toEqual(ids);
    expect(channelWrites(before, channel)).toEqual([]);
    // At least one follow-up was made while streaming (it showed the mark first).
    expect(shown.slice(1).some((m) => m.history[0]!.endsWith(WRITING_MARK))).toBe(true);
    expect(shown[0]!.history[0]).toBe('');
    const writes = webhookWrites(before, ix);
    expect(writes.filter((r) => r.method === 'POST')).toHaveLength(2);
    expect(writes.every((r) => r.status === 200)).toBe(true);
    expectPaced(writes);
  }, 50_000);

  it("every write to the channel — the status line and its edits, the streamed messages, the final pieces and a leftover's delete — waits for the channel's turn", async () => {
    const channel = fake.ids.general;
    const before = await mark(channel);
    stack.fake.script([
      { content: 'Let me look at the files.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }] },
      { content: 'And once more, quickly.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }], delayMs: 200 },
      { content: prose(4_500), chunks: 10, chunkDelayMs: 300, delayMs: 200 },
    ]);
    mention(channel, 'look twice, then write a very long answer');
    await ended(channel, before, 60_000);

    const writes = everyWrite(before, channel);
    const kinds = new Set(writes.map((r) => r.method));
    // Posts, edits and deletes (the status message goes once the reply is out) were all made.
    expect([...kinds].sort()).toEqual(['DELETE', 'PATCH', 'POST']);
    expect(liveSince(before, channel).length).toBeGreaterThanOrEqual(3);
    const gaps = writes.slice(1).map((r, i) => r.at - writes[i]!.at);
    console.log(`discord: smallest gap between writes to one channel ${Math.min(...gaps)} ms over ${writes.length} writes`);
    expectPaced(writes);
  }, 90_000);

  it('a short answer is not streamed: it is posted once, as before', async () => {
    const channel = fake.ids.general;
    const before = await mark(channel);
    stack.fake.script([{ content: 'Short and **sweet**.' }]);
    const asked = mention(channel, 'hi');
    await ended(channel, before, 20_000);
    const made = madeSince(before, channel);
    expect(made.map((m) => [m.content, m.history.length, m.message_reference?.message_id])).toEqual([['Short and **sweet**.', 1, asked.id]]);
    expect(channelWrites(before, channel).map((r) => r.method)).toEqual(['POST']);

    // And /ask: the deferred response is replaced by the answer in one edit.
    const other = await mark(fake.ids.random);
    stack.fake.script([{ content: 'Short and **sweet**.' }]);
    const ix = fake.slash({ name: 'ask', channel: fake.ids.random, prompt: 'hi' });
    await ended(fake.ids.random, other, 20_000);
    expect(fake.messages.find((m) => m.id === ix.originalId)!.history).toEqual(['', 'Short and **sweet**.']);
    expect(webhookWrites(other, ix).map((r) => r.method)).toEqual(['PATCH']);
    expect(ix.followups).toEqual([]);
  }, 40_000);
});
