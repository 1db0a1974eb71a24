import { describe, expect, it } from 'vitest';
import { GrammyError, HttpError } from 'grammy';
import { classifyTelegramError, withTelegramRetries } from '../../../src/channels/telegram/errors.js';
import { ConversationPacer } from '../../../src/channels/kit/pacer.js';

const tgError = (error_code: number, description: string, parameters: Record<string, number> = {}) =>
  new GrammyError('Call failed', { ok: false, error_code, description, parameters }, 'sendMessage', {});
const netError = (code: string) => new HttpError("Network request for 'sendMessage' failed!", Object.assign(new Error(code), { code }));

describe('classifyTelegramError: one mapping from Bot API errors to what to do next', () => {
  it.each([
    [tgError(429, 'Too Many Requests: retry after 7', { retry_after: 7 }), { kind: 'rate_limited', retryAfterMs: 7000 }],
    [tgError(400, 'Bad Request: message is not modified: specified new message content and reply markup are exactly the same'), { kind: 'not_modified' }],
    [tgError(400, 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0'), { kind: 'bad_entities' }],
    [tgError(400, 'Bad Request: message is too long'), { kind: 'too_long' }],
    [tgError(400, 'Bad Request: group chat was upgraded to a supergroup chat', { migrate_to_chat_id: -100123 }), { kind: 'migrated', chatId: -100123 }],
    [tgError(400, 'Bad Request: message to edit not found'), { kind: 'gone' }],
    [tgError(400, 'Bad Request: message to delete not found'), { kind: 'gone' }],
    [tgError(401, 'Unauthorized'), { kind: 'unauthorized' }],
    [tgError(409, 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running'), { kind: 'conflict' }],
    [tgError(502, 'Bad Gateway'), { kind: 'transient' }],
    [tgError(400, 'Bad Request: chat not found'), { kind: 'fatal' }],
    [tgError(413, 'Request Entity Too Large'), { kind: 'too_large' }],
    [tgError(400, 'Bad Request: PHOTO_INVALID_DIMENSIONS'), { kind: 'bad_photo' }],
    [netError('ECONNREFUSED'), { kind: 'unsent' }],
    [netError('ECONNRESET'), { kind: 'transient' }],
    [new Error('something else'), { kind: 'fatal' }],
  ])('%s', (err, expected) => {
    expect(classifyTelegramError(err)).toEqual(expected);
  });
});

describe('withTelegramRetries', () => {
  it('repeats a call that never left, but not a write whose outcome is unknown', async () => {
    let calls = 0;
    const unsent = await withTelegramRetries(
      async () => {
        calls += 1;
        if (calls < 2) throw netError('ECONNREFUSED');
        return 'ok';
      },
      { idempotent: false },
    );
    expect([unsent, calls]).toEqual(['ok', 2]);

    calls = 0;
    await expect(
      withTelegramRetries(
        async () => {
          calls += 1;
          throw netError('ECONNRESET');
        },
        { idempotent: false },
      ),
    ).rejects.toBeInstanceOf(HttpError);
    expect(calls).toBe(1);

    calls = 0;
    await withTelegramRetries(
      async () => {
        calls += 1;
        if (calls < 2) throw tgError(502, 'Bad Gateway');
      },
      { idempotent: true },
    );
    expect(calls).toBe(2);
  });

  it('throws at once on a client error, and when retry_after is longer than the cap', async () => {
    let calls = 0;
    await expect(
      withTelegramRetries(
        async () => {
          calls += 1;
          throw tgError(400, 'Bad Request: chat not found');
        },
        { idempotent: true },
      ),
    ).rejects.toThrow('chat not found');
    expect(calls).toBe(1);
    const waits: number[] = [];
    await expect(
      withTelegramRetries(
        async () => {
          throw tgError(429, 'Too Many Requests: retry after 600', { retry_after: 600 });
        },
        { idempotent: true, maxWaitMs: 60_000, onWait: (_f, ms) => waits.push(ms) },
      ),
    ).rejects.toThrow('retry after 600');
    expect(waits).toEqual([]);
  });
});

describe('ConversationPacer (channels/kit/pacer.ts), as Telegram uses it', () => {
  it('a write that rides on the one just made goes at once and costs the next write a gap more; never while flooded', () => {
    let now = 1_000;
    const pacer = new ConversationPacer(1000, () => now);
    pacer.wrote('1'); // the placeholder
    now += 20;
    expect(pacer.rideOn('1')).toBe(true); // its fill, at once
    expect(pacer.waitMs('1')).toBe(1980); // the next write: two gaps after the placeholder
    now += 5_000;
    pacer.flood('1', 3_000);
    expect(pacer.rideOn('1')).toBe(false);
  });

  it('spaces writes of one chat and holds a flood wait; other chats are unaffected', () => {
    let now = 1_000;
    const pacer = new ConversationPacer(1000, () => now);
    expect(pacer.waitMs('1')).toBe(0);
    pacer.wrote('1');
    now += 400;
    expect(pacer.waitMs('1')).toBe(600);
    expect(pacer.waitMs('2')).toBe(0);
    pacer.flood('1', 5000);
    expect(pacer.waitMs('1')).toBe(5000);
    expect(pacer.floodWaitMs('1')).toBe(5000);
    expect(pacer.floodWaitMs('2')).toBe(0);
  });

  it('a deferred edit applies the newest text once; cancelling forgets it', async () => {
    const pacer = new ConversationPacer(1000);
    const applied: string[] = [];
    pacer.defer('1', '10', 'a', 20, (t) => applied.push(t));
    pacer.defer('1', '10', 'b', 20, (t) => applied.push(t));
    pacer.defer('1', '11', 'x', 20, (t) => applied.push(t));
    pacer.cancel('1', '11');
    expect(pacer.pendingCount()).toBe(1);
    await new Promise((r) => setTimeout(r, 60));
    expect(applied).toEqual(['b']);
    expect(pacer.pendingCount()).toBe(0);
  });

  it('writes that must happen take turns, in order, each a gap after the one before; a waiting turn holds off best-effort writes', async () => {
    const gap = 60;
    const pacer = new ConversationPacer(gap);
    const at: number[] = [];
    const turns = [0, 1, 2].map(() => pacer.turn('7', 10_000).then(() => at.push(Date.now())));
    expect(pacer.waitMs('7')).toBeGreaterThan(0);
    await Promise.all(turns);
    expect(at).toHaveLength(3);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(gap - 5);
    expect(pacer.waitMs('7')).toBeGreaterThan(0);
    expect(pacer.waitMs('8')).toBe(0);
  });
});
