import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { createLogger, type Logger } from '../../../src/log.js';
import { SlackOutbound } from '../../../src/channels/slack/outbound.js';
import { PIECE_EVENT } from '../../../src/channels/slack/find-piece.js';
import { MAY_REPEAT_NOTE, memoryLedger, type PieceLedger } from '../../../src/channels/kit/pieces.js';
import type { InboundMessage, StreamShown } from '../../../src/channels/types.js';
import { BOT_TOKEN, REQUIRED_SCOPES, TEAM_ID, startFakeSlack, type FakeMessage, type FakeSlack } from '../../fakes/slack-server.js';
import { dropPrefix, testRedis, uniquePrefix } from '../../helpers/redis.js';

/**
 * Slack's `find` for sendPieces: a reply's piece whose send nobody heard back from (a worker died
 * between sending it and Slack's answer) is looked up by the metadata it was posted with, so the
 * resuming worker neither posts it twice nor marks it "may repeat" when Slack can tell.
 */

/** Log lines, as JSON, of a logger of the test's own. */
function capturingLogger(): { log: Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  const log = createLogger('info', 'test', { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines };
}

class WorkerDied extends Error {}

/**
 * The journal of a worker that dies as soon as a write goes wrong: the piece it was sending stays
 * `started` (the worker never learnt the outcome). The resuming run gets a ledger of its own with
 * the same states (as it reads them from the turn's journal).
 */
function dyingLedger(): PieceLedger {
  const ledger = memoryLedger();
  return {
    ...ledger,
    failed: async () => {
      throw new WorkerDied('the worker died before it heard back from Slack');
    },
  };
}

/** The journal as the dead worker left it, for the run that resumes. */
async function resumedFrom(dead: PieceLedger, pieces: number): Promise<PieceLedger> {
  const ledger = memoryLedger();
  for (let i = 0; i < pieces; i++) {
    const state = dead.state(i);
    if (state === 'started') await ledger.started(i);
    else if (typeof state === 'object' && 'posted' in state) await ledger.posted(i, state.posted);
  }
  return ledger;
}

/** Paragraphs of words: an answer long enough for three pieces or more. */
function paragraphs(n: number): string {
  return Array.from({ length: n }, (_, i) => `Paragraph ${i + 1}: ${'words '.repeat(60).trim()}`).join('\n\n');
}

interface Place {
  name: string;
  /** The listing that looks the piece up there. */
  method: 'conversations.replies' | 'conversations.history';
  /** The message the reply answers (a person's message the fake now knows). */
  message(slack: FakeSlack): InboundMessage;
}

function inbound(channel: string, ts: string, thread: string | undefined): InboundMessage {
  return {
    v: 1,
    id: `${channel}:${ts}`,
    platform: 'slack',
    conversation: channel,
    ...(thread !== undefined && { thread }),
    sender: { id: 'U0ADA' },
    text: 'hi',
    attachments: [],
    eventId: `${channel}:${ts}`,
    receivedAt: Date.now(),
    replyTo: ts,
  };
}

const PLACES: Place[] = [
  {
    name: 'in a channel thread',
    method: 'conversations.replies',
    message: (slack) => {
      const m = slack.addMessage('C0LOOK', '<@U0BOT> hi');
      return inbound(m.channel, m.ts, m.ts);
    },
  },
  {
    name: 'at the top level of a DM',
    method: 'conversations.history',
    message: (slack) => {
      const m = slack.addMessage('D0LOOK', 'hi');
      return inbound(m.channel, m.ts, undefined);
    },
  },
  {
    name: 'at the top level of a channel (/ask: no message, looked up from its arrival)',
    method: 'conversations.history',
    message: () => ({
      v: 1,
      id: `ask:${Date.now()}.${Math.random().toString(16).slice(2)}`,
      platform: 'slack',
      conversation: 'C0ASK',
      sender: { id: 'U0ADA' },
      text: 'what is two plus two?',
      attachments: [],
      eventId: 'ask:1',
      receivedAt: Date.now(),
      meta: { via: 'ask', user: 'U0ADA' },
    }),
  },
];

describe('slack reply pieces whose send was cut off are looked up (fake Slack)', () => {
  let slack: FakeSlack;
  let redis: Redis;
  let prefix: string;
  let lines: Record<string, any>[];
  let log: Logger;

  /** An adapter of a worker of its own (its own client and pacer): the dead one and the one that resumes are two. */
  const worker = (fake = slack) => new SlackOutbound({ token: BOT_TOKEN, apiUrl: fake.apiUrl, redis, prefix, log });
  /** The lookup's warnings (the SDK warns of the dropped connection by itself). */
  const lookupWarnings = () => lines.filter((l) => l.level >= 40 && String(l.msg).includes('reply piece'));
  const inConversation = (to: InboundMessage): FakeMessage[] => slack.messages.filter((m) => m.channel === to.conversation && !m.deleted);

  /** What `post` sends for this answer, from an adapter of its own against a Slack of its own. */
  async function expectedPieces(to: InboundMessage, text: string): Promise<string[]> {
    const other = await startFakeSlack();
    try {
      await worker(other).post(to, text, 'answer');
      return other.messages.map((m) => m.text);
    } finally {
      await other.close();
    }
  }

  beforeEach(async () => {
    ({ log, lines } = capturingLogger());
    redis = testRedis();
    prefix = uniquePrefix('slack-lookup');
  });
  afterEach(async () => {
    await slack?.close();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  describe.each(PLACES)('$name', (place) => {
    beforeEach(async () => {
      slack = await startFakeSlack();
    });

    it('a piece that landed but whose answer was lost (connection dropped, the worker died) is found, not posted again', async () => {
      const to = place.message(slack);
      // Another reply's piece 0 in the same conversation, and a notice answering the same message: neither is taken for the piece.
      await worker().post(place.message(slack), 'An earlier answer to someone else.', 'answer');
      await worker().post(to, 'A notice about this message.', 'notice');
      const text = paragraphs(24);
      const expected = await expectedPieces(to, text);
      const n = expected.length;
      expect(n).toBeGreaterThanOrEqual(3);
      const before = inConversation(to).length;

      // Piece 1 is posted, then its connection drops: the worker dies before it hears back.
      slack.fail('chat.postMessage', { pass: true }, { drop: true });
      const dead = dyingLedger();
      await expect(worker().post(to, text, 'answer', dead)).rejects.toBeInstanceOf(WorkerDied);
      expect(dead.state(1)).toBe('started');
      expect(
        inConversation(to)
          .slice(before)
          .map((m) => m.text),
      ).toEqual(expected.slice(0, 2));

      const ledger = await resumedFrom(dead, n);
      const ids = await worker().post(to, text, 'answer', ledger);

      const answer = inConversation(to).slice(before);
      expect(answer.map((m) => m.text)).toEqual(expected);
      expect(answer.some((m) => m.text.startsWith(MAY_REPEAT_NOTE))).toBe(false);
      expect(ids).toEqual(answer.map((m) => m.ts));
      expect(ledger.state(1)).toEqual({ posted: answer[1]!.ts });
      // One lookup, for piece 1 only (piece 0 was known posted), reading the metadata; the resumed run posted the pieces after it alone.
      const lookups = slack.callsOf(place.method);
      expect(lookups).toHaveLength(1);
      expect(lookups[0]!.params).toMatchObject({ channel: to.conversation, include_all_metadata: 'true', limit: '200', inclusive: 'true' });
      if (place.method === 'conversations.replies') expect(lookups[0]!.params.ts).toBe(to.thread);
      // The earlier answer, the notice, the dead worker's two, the resumed run's rest.
      expect(slack.callsOf('chat.postMessage', true)).toHaveLength(1 + 1 + 2 + (n - 2));
      // Each piece names itself in its metadata.
      expect(answer.map((m) => m.metadata)).toEqual(
        expected.map((_, piece) => ({ event_type: PIECE_EVENT, event_payload: { answers: to.id, piece, digest: expect.stringMatching(/^[0-9a-f]{16}$/) } })),
      );
      expect(lookupWarnings()).toEqual([]);
    });

    it('a piece whose request never took effect (started, nothing in the conversation) is posted once, without the note', async () => {
      const to = place.message(slack);
      const ledger = memoryLedger();
      await ledger.started(0);
      const ids = await worker().post(to, 'Four.', 'answer', ledger);
      const posted = inConversation(to);
      expect(posted.map((m) => m.text)).toEqual(await expectedPieces(to, 'Four.'));
      expect(posted[0]!.text.startsWith(MAY_REPEAT_NOTE)).toBe(false);
      expect(ids).toEqual([posted[0]!.ts]);
      expect(slack.callsOf(place.method)).toHaveLength(1);
      expect(slack.callsOf('chat.postMessage', true)).toHaveLength(1);
    });

    it('a healthy worker whose post loses its answer looks it up at once and does not post it twice', async () => {
      const to = place.message(slack);
      slack.fail('chat.postMessage', { drop: true });
      const ids = await worker().post(to, 'Only once.', 'answer');
      expect(inConversation(to).map((m) => m.ts)).toEqual(ids);
      expect(slack.callsOf('chat.postMessage', true)).toHaveLength(1);
      expect(slack.callsOf(place.method)).toHaveLength(1);
    });

    it('a post still on its way back when the worker dies (the answer held) is found by the worker that resumes', async () => {
      const to = place.message(slack);
      slack.holdResponses((call) => (call.method === 'chat.postMessage' ? 60_000 : 0));
      const ledger = memoryLedger();
      // The dead worker: its post took effect, its answer never comes back (the fake closes its connection at the end).
      void worker()
        .post(to, 'Held.', 'answer', ledger)
        .catch(() => undefined);
      for (let i = 0; i < 100 && inConversation(to).length === 0; i++) await sleep(20);
      expect(inConversation(to)).toHaveLength(1);
      expect(ledger.state(0)).toBe('started');
      slack.holdResponses(undefined);
      const resumed = await resumedFrom(ledger, 1);
      const ids = await worker().post(to, 'Held.', 'answer', resumed);
      expect(inConversation(to).map((m) => m.ts)).toEqual(ids);
      expect(slack.callsOf('chat.postMessage', true)).toHaveLength(1);
    });
  });

  it('the pieces of a streamed answer past the streamed message are looked up too', async () => {
    slack = await startFakeSlack();
    const user = slack.addMessage('C0STREAM', '<@U0BOT> write it up');
    const to = { ...inbound(user.channel, user.ts, user.ts), meta: { team: TEAM_ID } };
    const streaming = new SlackOutbound({ token: BOT_TOKEN, apiUrl: slack.apiUrl, redis, prefix, log, linkPreviews: true });
    const shown: StreamShown = await streaming.streamAnswer(to, 'Let me write this up.', { ids: [], texts: [] });
    expect(shown.ids).toHaveLength(1);
    const text = paragraphs(24);
    // Piece 0 goes into the streamed message (an edit); piece 1 is posted and its answer lost: the worker dies.
    slack.fail('chat.postMessage', { drop: true });
    const dead = dyingLedger();
    await expect(streaming.finishStream(to, shown, text, dead)).rejects.toBeInstanceOf(WorkerDied);
    expect(dead.state(1)).toBe('started');

    const resumed = await resumedFrom(dead, 10);
    const again = new SlackOutbound({ token: BOT_TOKEN, apiUrl: slack.apiUrl, redis, prefix, log, linkPreviews: true });
    const ids = await again.finishStream(to, shown, text, resumed);
    const answer = inConversation(to);
    expect(answer.map((m) => m.ts)).toEqual(ids);
    expect(ids[0]).toBe(shown.ids[0]);
    expect(answer.length).toBeGreaterThanOrEqual(3);
    expect(answer.some((m) => m.text.startsWith(MAY_REPEAT_NOTE))).toBe(false);
    // The streamed message carries no piece metadata (it was never posted with chat.postMessage); the posted pieces do.
    expect(answer.map((m) => m.metadata?.event_payload.piece)).toEqual(answer.map((_, i) => (i === 0 ? undefined : i)));
    // Piece 1 once (the dead worker's), the rest by the resumed run.
    expect(slack.callsOf('chat.postMessage', true)).toHaveLength(answer.length - 1);
    expect(slack.callsOf('conversations.replies')).toHaveLength(1);
  });

  describe('when Slack cannot tell, the piece is sent again with the may-repeat note (the fallback)', () => {
    it('missing_scope: one warning names the scope the lookup needs', async () => {
      // An app installed before the history scopes were asked for.
      slack = await startFakeSlack({ scopes: REQUIRED_SCOPES.filter((s) => !s.endsWith(':history') || s === 'im:history') });
      const user = slack.addMessage('C0NOSCOPE', '<@U0BOT> hi');
      const to = inbound(user.channel, user.ts, user.ts);
      slack.fail('chat.postMessage', { drop: true });
      const dead = dyingLedger();
      await expect(worker().post(to, 'Maybe twice.', 'answer', dead)).rejects.toBeInstanceOf(WorkerDied);

      const ids = await worker().post(to, 'Maybe twice.', 'answer', await resumedFrom(dead, 1));
      const texts = inConversation(to).map((m) => m.text.replaceAll('\u200b', ''));
      expect(texts).toEqual(['Maybe twice.', `${MAY_REPEAT_NOTE}Maybe twice.`]);
      expect(ids).toEqual([inConversation(to)[1]!.ts]);
      expect(slack.callsOf('conversations.replies', true).map((c) => c.error)).toEqual(['missing_scope']);
      const warnings = lookupWarnings();
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.scope).toBe('channels:history');
      expect(warnings[0]!.msg).toContain('needs the channels:history scope');
    });

    it('thread_not_found (the thread is gone): sent again with the note', async () => {
      slack = await startFakeSlack();
      // The fake knows no message with this ts: the thread's parent was deleted.
      const to = inbound('C0GONE', '1600000000.000100', '1600000000.000100');
      const ledger = memoryLedger();
      await ledger.started(0);
      await worker().post(to, 'Anyone there?', 'answer', ledger);
      expect(inConversation(to).map((m) => m.text.replaceAll('\u200b', ''))).toEqual([`${MAY_REPEAT_NOTE}Anyone there?`]);
      expect(slack.callsOf('conversations.replies', true).map((c) => c.error)).toEqual(['thread_not_found']);
      expect(lookupWarnings()).toHaveLength(1);
    });
  });
});
