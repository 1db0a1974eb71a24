import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DiscordOutbound } from '../../../src/channels/discord/outbound.js';
import { DiscordRest } from '../../../src/channels/discord/rest.js';
import { ORIGINAL } from '../../../src/channels/discord/ids.js';
import { normaliseCommand, normaliseMessage } from '../../../src/channels/discord/inbound.js';
import { parseStreamed } from '../../../src/channels/discord/stream-layout.js';
import type { InboundMessage, StreamShown } from '../../../src/channels/types.js';
import { memoryLedger, postedId, type PieceLedger } from '../../../src/channels/kit/pieces.js';
import { createLogger } from '../../../src/log.js';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction } from '../../fakes/discord-server.js';

/**
 * Streamed answers on Discord, driven through the real adapter and REST client against the fake.
 * Time is a clock the test moves (the adapter's pacing and the interaction token's life read it),
 * so pacing and retry-after are exercised without waiting.
 */

const log = createLogger('silent');
const NOTHING: StreamShown = { ids: [], texts: [] };
const SIXTEEN_MINUTES = 16 * 60_000;

let fake: FakeDiscord;

beforeAll(async () => {
  fake = await startFakeDiscord();
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  fake.requests.length = 0;
});

/** A clock the test moves; it starts now, so interaction tokens are fresh. */
function clock(offsetMs = 0) {
  let t = Date.now() + offsetMs;
  return { now: () => t, tick: (ms: number) => void (t += ms) };
}

function outbound(now: () => number = Date.now): DiscordOutbound {
  const rest = new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl });
  return new DiscordOutbound({ rest, log, downloadHosts: [new URL(fake.base).host], now });
}

/** A user's mention in a channel, as the gateway would normalise it. */
function mention(channel = fake.ids.general, text = 'do it'): InboundMessage {
  const m = fake.userMessage({ channel, content: `<@${fake.ids.app}> ${text}` });
  const gate = normaliseMessage(
    {
      id: m.id,
      channelId: m.channel_id,
      guildId: fake.ids.guild,
      author: { id: fake.ids.alice, name: 'Alice', bot: false },
      content: m.content,
      system: false,
      webhook: false,
      mentionedUserIds: [fake.ids.app],
      mentionedRoleIds: [],
      attachments: [],
      userNames: {},
    },
    { id: fake.ids.app },
    Date.now(),
  );
  if (!gate.ok) throw new Error('not addressed');
  return gate.message;
}

/** A deferred /ask (the deferred response shows "is thinking…"). */
async function deferredAsk(channel = fake.ids.general): Promise<{ ix: FakeInteraction; to: InboundMessage }> {
  const ix = fake.slash({ name: 'ask', channel, prompt: 'do it' });
  const rest = new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl });
  await rest.request('POST', `/interactions/${ix.id}/${ix.token}/callback`, { auth: false, body: { type: 5, data: { flags: 0 } } });
  const to = normaliseCommand(
    {
      id: ix.id,
      token: ix.token,
      applicationId: fake.ids.app,
      name: 'ask',
      prompt: 'do it',
      channelId: channel,
      guildId: fake.ids.guild,
      user: { id: fake.ids.alice, name: 'Alice' },
    },
    Date.now(),
  );
  return { ix, to };
}

const msg = (id: string) => fake.messages.find((m) => m.id === id)!;
/** The fake's message a streamed id names. */
const shownMsg = (ix: FakeInteraction | undefined, id: string) => {
  const m = parseStreamed(id);
  return msg(m.where === 'original' && !m.id ? ix!.originalId! : m.id!);
};
const contents = (ids: string[], ix?: FakeInteraction) => ids.map((id) => (id === ORIGINAL ? msg(ix!.originalId!) : msg(id)).content);

/** Prose of about `n` characters in paragraphs, each sentence numbered so order can be checked. */
function prose(n: number, tag = 's'): string {
  const out: string[] = [];
  let len = 0;
  for (let k = 0; len < n; k++) {
    const sentence = `${tag}${k} is one more sentence of the answer.`;
    out.push(k > 0 && k % 6 === 0 ? `\n\n${sentence}` : sentence);
    len += sentence.length + 1;
  }
  return out.join(' ').replace(/ \n\n/g, '\n\n').slice(0, n).trimEnd();
}

/** The final answer: Markdown Discord lacks (a table, a level-4 heading) is what `post` rewrites. */
const FINAL = [
  'Here is **the plan** for <@456> and @everyone:',
  '',
  '#### Steps',
  '',
  '| step | who |',
  '|------|-----|',
  '| read | me  |',
  '',
  '```js',
  'const done = true;',
  '```',
  '',
  'That is all.',
].join('\n');

describe('Discord streamed answers: a mention (channel messages)', () => {
  it('a growing answer is one reply edited with growing text; finishing makes it exactly what post sends, once, pinging no one else', async () => {
    const c = clock();
    const out = outbound(c.now);
    const to = mention();
    const parts = ['Here is **the plan**', 'Here is **the plan** for <@456> and @everyone:', 'Here is **the plan** for <@456> and @everyone:\n\n#### Steps'];
    let shown = await out.streamAnswer(to, parts[0]!, NOTHING);
    const streamed = msg(shown.ids[0]!);
    // The first message is the reply that notifies the asker, as the answer post would be.
    expect(streamed.pings).toEqual([`replied:${fake.ids.alice}`]);
    for (const part of parts.slice(1)) {
      c.tick(1_200);
      shown = await out.streamAnswer(to, part, shown);
    }
    expect(shown.ids).toHaveLength(1);
    expect(streamed.history).toEqual(parts.map((p) => `${p.replace('#### Steps', '**Steps**')} …`));
    expect(shown.texts).toEqual([streamed.content]);
    expect(streamed.message_reference?.message_id).toBe(to.replyTo);
    expect(fake.calls('PATCH', /^\/channels\/\d+\/messages\/\d+$/).every((r) => JSON.stringify(r.body.allowed_mentions) === '{"parse":[]}')).toBe(true);

    const ids = await out.finishStream(to, shown, FINAL);
    expect(ids).toEqual(shown.ids);
    const expected = await outbound().post(mention(fake.ids.random), FINAL, 'answer');
    expect(contents(ids)).toEqual(contents(expected));
    expect(streamed.content).toContain('```\n| step | who |');
    expect(streamed.pings).toEqual([]);
    // One message made in #general, and the answer shows once.
    expect(fake.calls('POST', new RegExp(`^/channels/${fake.ids.general}/messages$`))).toHaveLength(1);
    expect(fake.botMessages(fake.ids.general).filter((m) => m.content.includes('That is all.'))).toHaveLength(1);
  });

  it('paces itself: a write sooner than 1.2 s after the last writes nothing, and an unchanged text is not written again', async () => {
    const c = clock();
    const out = outbound(c.now);
    const to = mention();
    expect(out.streamIntervalMs(to)).toBe(1_200);
    const first = await out.streamAnswer(to, 'one', NOTHING);
    fake.requests.length = 0;
    c.tick(500);
    expect(await out.streamAnswer(to, 'one two', first)).toBe(first);
    c.tick(700);
    const second = await out.streamAnswer(to, 'one two', first);
    expect(second.texts).toEqual(['one two …']);
    c.tick(1_200);
    expect(await out.streamAnswer(to, 'one two', second)).toBe(second);
    expect(fake.requests.map((r) => r.method)).toEqual(['PATCH']);
  });

  it('a code block still being written is closed in the message, so the mark stays outside it', async () => {
    const out = outbound(clock().now);
    const shown = await out.streamAnswer(mention(), 'Run this:\n\n```sh\nnpm test', NOTHING);
    expect(shown.texts).toEqual(['Run this:\n\n```sh\nnpm test\n```\n…']);
  });

  it('past 2,000 characters the stream continues in a new message, in order; a shorter final answer removes the one it no longer needs', async () => {
    const c = clock();
    const out = outbound(c.now);
    const to = mention();
    const long = prose(4_200);
    let shown = await out.streamAnswer(to, long.slice(0, 1_500), NOTHING);
    c.tick(1_200);
    shown = await out.streamAnswer(to, long.slice(0, 2_600), shown);
    expect(shown.ids).toHaveLength(2);
    const [a, b] = shown.ids.map((id) => msg(id));
    const frozen = a!.content;
    expect(frozen.endsWith('…')).toBe(false);
    expect(BigInt(a!.id) < BigInt(b!.id)).toBe(true);
    expect(b!.message_reference).toBeUndefined();
    c.tick(1_200);
    shown = await out.streamAnswer(to, long.slice(0, 3_400), shown);
    c.tick(1_200);
    shown = await out.streamAnswer(to, long, shown);
    expect(shown.ids).toHaveLength(3);
    // A message the text has gone past stops changing.
    expect(a!.history.slice(1).every((h) => h === frozen)).toBe(true);
    expect(shown.texts.every((t) => t.length <= 2_000)).toBe(true);
    expect(shown.texts.join('').indexOf('s1 ')).toBeLessThan(shown.texts.join('').lastIndexOf('s9 '));

    const final = long.slice(0, 2_600);
    const ids = await out.finishStream(to, shown, final);
    expect(ids).toEqual(shown.ids.slice(0, 2));
    expect(msg(shown.ids[2]!).deleted).toBe(true);
    const expected = await outbound().post(mention(fake.ids.random), final, 'answer');
    expect(contents(ids)).toEqual(contents(expected));
    expect(fake.botMessages(fake.ids.general).filter((m) => shown.ids.includes(m.id))).toHaveLength(2);
  });

  it('a 429 on an edit: returns at once with what was shown, holds the channel for the retry-after, then shows the newer text', async () => {
    const c = clock();
    const out = outbound(c.now);
    const to = mention();
    const first = await out.streamAnswer(to, 'Looking at the notes', NOTHING);
    fake.fail({ method: 'PATCH', path: /^\/channels\/\d+\/messages\/\d+$/, status: 429, retryAfter: 3 });
    c.tick(1_200);
    const started = performance.now();
    const held = await out.streamAnswer(to, 'Looking at the notes, found three', first);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(held).toEqual(first);
    expect(fake.calls('PATCH', /^\/channels\//).map((r) => r.status)).toEqual([429]);
    expect(out.streamIntervalMs(to)).toBe(3_000);
    // Past the pacing but not the retry-after: nothing is sent.
    c.tick(1_500);
    expect(await out.streamAnswer(to, 'Looking at the notes, found three files', held)).toBe(held);
    expect(fake.calls('PATCH', /^\/channels\//)).toHaveLength(1);
    c.tick(1_600);
    expect(out.streamIntervalMs(to)).toBe(1_200);
    const after = await out.streamAnswer(to, 'Looking at the notes, found three files', held);
    expect(after.texts).toEqual(['Looking at the notes, found three files …']);
    expect(msg(after.ids[0]!).history).toEqual(['Looking at the notes …', 'Looking at the notes, found three files …']);

    const ids = await out.finishStream(to, after, FINAL);
    expect(contents(ids)).toEqual(contents(await outbound().post(mention(fake.ids.random), FINAL, 'answer')));
  });

  it('a global 429 holds every conversation until its retry-after', async () => {
    const c = clock();
    const out = outbound(c.now);
    const here = mention();
    const there = mention(fake.ids.random);
    const shown = await out.streamAnswer(here, 'first words', NOTHING);
    fake.fail({
      method: 'PATCH',
      path: /^\/channels\/\d+\/messages\/\d+$/,
      status: 429,
      body: { message: 'You are being rate limited.', retry_after: 2.5, global: true },
    });
    c.tick(1_200);
    await out.streamAnswer(here, 'first words and more', shown);
    fake.requests.length = 0;
    expect(await out.streamAnswer(there, 'elsewhere', NOTHING)).toEqual(NOTHING);
    expect(fake.requests).toEqual([]);
    c.tick(2_500);
    expect((await out.streamAnswer(there, 'elsewhere', NOTHING)).ids).toHaveLength(1);
  });

  it('finishing twice with the same ledger (a resumed delivery) posts nothing twice; a piece whose POST was interrupted is resent with its nonce', async () => {
    const c = clock();
    const out = outbound(c.now);
    const to = mention();
    const long = prose(4_200);
    const shown = await out.streamAnswer(to, long.slice(0, 2_600), NOTHING);
    expect(shown.ids).toHaveLength(2);
    const ledger = memoryLedger();
    const ids = await out.finishStream(to, shown, long, ledger);
    expect(ids).toHaveLength(3);
    const made = fake.calls('POST', /^\/channels\/\d+\/messages$/);
    expect(made).toHaveLength(3);

    fake.requests.length = 0;
    expect(await out.finishStream(to, shown, long, ledger)).toEqual(ids);
    expect(fake.requests.filter((r) => r.method !== 'DELETE')).toEqual([]);

    // The worker died after sending the third piece and before hearing back: the resend finds it by its nonce.
    const resumed = copyLedger(ledger, 3);
    await resumed.started(2);
    fake.requests.length = 0;
    expect(await outbound(c.now).finishStream(to, shown, long, resumed)).toEqual(ids);
    const resent = fake.calls('POST', /^\/channels\/\d+\/messages$/);
    expect(resent).toHaveLength(1);
    expect(resent[0]!.body.nonce).toBe(made[2]!.body.nonce);
    expect(fake.botMessages(fake.ids.general).filter((m) => m.content === msg(ids[2]!).content)).toHaveLength(1);
  });

  it('a text that shrinks (a retried model call) is shown as it is now: the message is edited and the one past it removed', async () => {
    const c = clock();
    const out = outbound(c.now);
    const to = mention();
    const long = prose(3_000, 'old');
    let shown = await out.streamAnswer(to, long, NOTHING);
    expect(shown.ids).toHaveLength(2);
    const [first, second] = shown.ids;
    c.tick(1_200);
    shown = await out.streamAnswer(to, 'A different, shorter start', shown);
    expect(shown).toEqual({ ids: [first], texts: ['A different, shorter start …'] });
    expect(msg(first!).content).toBe('A different, shorter start …');
    expect(msg(second!).deleted).toBe(true);
    c.tick(1_200);
    shown = await out.streamAnswer(to, 'A different', shown);
    expect(msg(first!).content).toBe('A different …');

    const ids = await out.finishStream(to, shown, 'A different answer.');
    expect(ids).toEqual([first]);
    expect(msg(first!).content).toBe('A different answer.');
    expect(fake.botMessages(fake.ids.general).filter((m) => [first, second].includes(m.id))).toHaveLength(1);
  });
});

describe('Discord streamed answers: a slash command (the interaction webhook)', () => {
  it('streams into the deferred response and finishes it as post would, with no message in the channel', async () => {
    const c = clock();
    const out = outbound(c.now);
    const { ix, to } = await deferredAsk();
    await out.post(to, '• looking', 'status');
    // The status line took the channel's turn: the stream writes one interval later.
    expect(await out.streamAnswer(to, 'Here is **the plan**', NOTHING)).toEqual(NOTHING);
    c.tick(1_200);
    let shown = await out.streamAnswer(to, 'Here is **the plan**', NOTHING);
    c.tick(1_200);
    shown = await out.streamAnswer(to, 'Here is **the plan** for <@456> and @everyone:', shown);
    expect(shown.ids).toEqual([`${ORIGINAL}:${ix.originalId}`]);
    expect(msg(ix.originalId!).history).toEqual(['', '• looking', 'Here is **the plan** …', 'Here is **the plan** for <@456> and @everyone: …']);
    expect(fake.calls('PATCH', /\/messages\/@original$/).every((r) => r.auth === undefined && JSON.stringify(r.body.allowed_mentions) === '{"parse":[]}')).toBe(
      true,
    );

    const ids = await out.finishStream(to, shown, FINAL);
    expect(ids).toEqual([ORIGINAL]);
    const other = await deferredAsk(fake.ids.random);
    expect(contents(ids, ix)).toEqual(contents(await outbound().post(other.to, FINAL, 'answer'), other.ix));
    expect(msg(ix.originalId!).pings).toEqual([]);
    expect(ix.followups).toEqual([]);
    expect(fake.calls('POST', new RegExp(`^/channels/${fake.ids.general}/messages$`))).toEqual([]);
  });

  it('past 2,000 characters it continues in follow-ups; finishing edits them and posts the piece past them, in order', async () => {
    const c = clock();
    const out = outbound(c.now);
    const { ix, to } = await deferredAsk();
    const long = prose(5_000);
    let shown = await out.streamAnswer(to, long.slice(0, 1_800), NOTHING);
    c.tick(1_200);
    shown = await out.streamAnswer(to, long.slice(0, 2_600), shown);
    c.tick(1_200);
    shown = await out.streamAnswer(to, long.slice(0, 3_300), shown);
    expect(shown.ids).toHaveLength(2);
    expect(ix.followups).toEqual([parseStreamed(shown.ids[1]!).id]);
    const original = msg(ix.originalId!);
    const frozen = original.content;
    // The deferred response was written twice (its text, then its final cut) and then left alone.
    expect(original.history.slice(1)).toEqual([`${long.slice(0, 1_800)} …`, frozen]);
    expect(fake.calls('PATCH', /\/messages\/@original$/)).toHaveLength(2);
    expect(fake.calls('PATCH', /^\/webhooks\/\d+\/[^/]+\/messages\/\d+$/)).toHaveLength(1);

    const ledger = memoryLedger();
    const ids = await out.finishStream(to, shown, long, ledger);
    expect(ids).toHaveLength(3);
    expect(ids.slice(0, 2)).toEqual([ORIGINAL, ix.followups[0]]);
    expect(ix.followups).toEqual(ids.slice(1));
    const other = await deferredAsk(fake.ids.random);
    expect(contents(ids, ix)).toEqual(contents(await outbound().post(other.to, long, 'answer'), other.ix));
    expect(fake.calls('POST', /^\/channels\//)).toEqual([]);

    // Resumed with the same ledger: nothing is posted again.
    fake.requests.length = 0;
    expect(await out.finishStream(to, shown, long, ledger)).toEqual(ids);
    expect(fake.calls('POST', /^\/webhooks\//)).toEqual([]);
    expect(ix.followups).toHaveLength(2);
  });

  it('a follow-up an interrupted delivery had started is posted again, never left as silence (a follow-up has no nonce)', async () => {
    const out = outbound(clock().now);
    const { ix, to } = await deferredAsk();
    const long = prose(4_500);
    const shown = await out.streamAnswer(to, long.slice(0, 2_600), NOTHING);
    const ledger = memoryLedger();
    await ledger.posted(0, ORIGINAL);
    await ledger.started(2);
    const ids = await out.finishStream(to, shown, long, ledger);
    expect(ids).toHaveLength(3);
    expect(ledger.state(2)).toMatchObject({ posted: expect.any(String) });
    expect(ix.followups).toHaveLength(2);
  });

  it('a 429 on the webhook mid-stream: nothing waits, and the next write after the retry-after lands', async () => {
    const c = clock();
    const out = outbound(c.now);
    const { ix, to } = await deferredAsk();
    const first = await out.streamAnswer(to, 'Reading', NOTHING);
    fake.fail({ method: 'PATCH', path: /\/messages\/@original$/, status: 429, retryAfter: 1.5 });
    c.tick(1_200);
    const started = performance.now();
    expect(await out.streamAnswer(to, 'Reading the notes', first)).toEqual(first);
    expect(performance.now() - started).toBeLessThan(1_000);
    c.tick(1_500);
    const after = await out.streamAnswer(to, 'Reading the notes now', first);
    expect(msg(ix.originalId!).content).toBe('Reading the notes now …');
    await out.finishStream(to, after, 'Read them.');
    expect(msg(ix.originalId!).content).toBe('Read them.');
  });

  it('a token that dies mid-stream: the streamed messages are finished in the channel by their ids, and not posted again', async () => {
    const c = clock();
    const out = outbound(c.now);
    const { ix, to } = await deferredAsk();
    const long = prose(3_000);
    const shown = await out.streamAnswer(to, long.slice(0, 2_600), NOTHING);
    expect(shown.ids).toHaveLength(2);
    fake.expire(ix.id);
    const ids = await out.finishStream(to, shown, long);
    expect(ids).toEqual([ORIGINAL, ix.followups[0]]);
    const other = await deferredAsk(fake.ids.random);
    expect(contents(ids, ix)).toEqual(contents(await outbound().post(other.to, long, 'answer'), other.ix));
    expect(fake.calls('PATCH', /^\/channels\/\d+\/messages\/\d+$/).map((r) => r.path)).toEqual([
      `/channels/${fake.ids.general}/messages/${ix.originalId}`,
      `/channels/${fake.ids.general}/messages/${ix.followups[0]}`,
    ]);
    expect(fake.calls('POST', /^\/channels\//)).toEqual([]);
  });

  it("past the token's 15 minutes the stream is channel messages naming the user, finished as post would", async () => {
    const late = clock(SIXTEEN_MINUTES);
    const out = outbound(late.now);
    const { ix, to } = await deferredAsk();
    const shown = await out.streamAnswer(to, 'Late, but @everyone here', NOTHING);
    const streamed = shownMsg(ix, shown.ids[0]!);
    expect(streamed).toMatchObject({ via: 'channel', content: `<@${fake.ids.alice}>\nLate, but @everyone here …`, pings: [`user:${fake.ids.alice}`] });
    expect(fake.calls('PATCH', /^\/webhooks\//)).toEqual([]);
    const ids = await out.finishStream(to, shown, 'Late, but **here**.');
    const other = await deferredAsk(fake.ids.random);
    expect(contents(ids)).toEqual(contents(await outbound(late.now).post(other.to, 'Late, but **here**.', 'answer')));
    expect(streamed.pings).toEqual([`user:${fake.ids.alice}`]);
  });

  it('a deferred response that refuses the first write: the stream goes to the channel, naming the user', async () => {
    const out = outbound(clock().now);
    const { ix, to } = await deferredAsk();
    fake.fail({ method: 'PATCH', path: /\/messages\/@original$/, status: 404, body: { message: 'Unknown Webhook', code: 10015 } });
    const shown = await out.streamAnswer(to, 'Answer begins', NOTHING);
    expect(shownMsg(ix, shown.ids[0]!)).toMatchObject({ via: 'channel', content: `<@${fake.ids.alice}>\nAnswer begins …` });
  });

  it('a step that goes on to tools keeps its text in the deferred response; progress is not written over it and the next step streams into a follow-up', async () => {
    const c = clock();
    const out = outbound(c.now);
    const { ix, to } = await deferredAsk();
    const interim = await out.streamAnswer(to, 'Let me read the notes first, then I will list what they say about the release.', NOTHING);
    await out.finishStream(to, interim, 'Let me read the notes first, then I will list what they say about the release.');
    await out.edit(to, ORIGINAL, '• read notes.md');
    expect(msg(ix.originalId!).content).toBe('Let me read the notes first, then I will list what they say about the release.');

    c.tick(1_200);
    const answer = await out.streamAnswer(to, 'The notes say', NOTHING);
    expect(parseStreamed(answer.ids[0]!).where).toBe('followup');
    const ids = await out.finishStream(to, answer, 'The notes say: ship on Friday.');
    expect(ids).toEqual(ix.followups);
    expect(msg(ix.followups[0]!).content).toBe('The notes say: ship on Friday.');
    expect(msg(ix.originalId!).content).toBe('Let me read the notes first, then I will list what they say about the release.');
  });

  it('removing a streamed follow-up deletes it through the webhook; one already gone is fine', async () => {
    const out = outbound(clock().now);
    const { ix, to } = await deferredAsk();
    const shown = await out.streamAnswer(to, prose(2_600), NOTHING);
    await out.remove(to, shown.ids[1]!);
    expect(msg(ix.followups[0]!).deleted).toBe(true);
    await expect(out.remove(to, shown.ids[1]!)).resolves.toBeUndefined();
    expect(fake.calls('DELETE', /^\/webhooks\//).map((r) => r.status)).toEqual([204, 404]);
    // The 404 was the message, not the interaction: the deferred response is still edited through the webhook.
    await out.edit(to, shown.ids[0]!, 'still here');
    expect(msg(ix.originalId!).content).toBe('still here');
  });
});

/** A ledger holding what `from` knows of its first `n` pieces (a worker taking the delivery over). */
function copyLedger(from: PieceLedger, n: number): PieceLedger {
  const copy = memoryLedger();
  for (let i = 0; i < n; i++) {
    const id = postedId(from.state(i));
    if (id !== undefined) void copy.posted(i, id);
  }
  return copy;
}
