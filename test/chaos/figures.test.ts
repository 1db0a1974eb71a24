import { describe, expect, it } from 'vitest';
import type { BotMessage } from '../fakes/telegram-server.js';
import { computeFigures, targetsMet, type SentMessage } from './figures.js';
import { PLACEHOLDER } from '../../src/channels/kit/pieces.js';

const CHAT = 1;
const messages: SentMessage[] = ['s0-m1-aaaa', 's0-m2-bbbb', 's0-m3-cccc'].map((token, i) => ({ token, session: 'telegram:1', chatId: CHAT, seq: i + 1 }));
let id = 0;
const post = (text: string, extra: Partial<BotMessage> = {}): BotMessage => ({
  chatId: CHAT,
  messageId: ++id,
  text,
  raw: text,
  deleted: false,
  edits: 0,
  ...extra,
});
const figures = (posts: BotMessage[], journal: string) =>
  computeFigures({ messages, posts, journals: new Map([[CHAT, journal]]), kills: [], freezes: [], runsStarted: 3, modelCalls: 6 });

describe('chaos figures', () => {
  it('a clean run: every message answered once, each line once, in order, status messages removed', () => {
    const f = figures(
      [post('Appending…', { silent: true, deleted: true }), post('done s0-m1-aaaa s0-m2-bbbb'), post('done s0-m3-cccc')],
      's0-m1-aaaa\ns0-m2-bbbb\ns0-m3-cccc\nEND\n',
    );
    expect([f.answeredOnce, f.lost, f.duplicates, f.repeatedSideEffects, f.orderViolations, f.leftoverStatus]).toEqual([3, 0, 0, 0, 0, 0]);
    expect(targetsMet(f)).toBe(true);
  });

  it('counts a re-delivered answer, a line written twice, lines out of order and a status message left behind', () => {
    const f = figures(
      [post('done s0-m1-aaaa'), post('done s0-m1-aaaa'), post('…', { silent: true }), post('done s0-m3-cccc'), post('done s0-m2-bbbb')],
      's0-m1-aaaa\ns0-m1-aaaa\ns0-m3-cccc\ns0-m2-bbbb\nEND\n',
    );
    expect({ duplicates: f.duplicates, repeated: f.repeatedSideEffects, order: f.orderViolations, leftover: f.leftoverStatus }).toEqual({
      duplicates: 1,
      repeated: 1,
      order: 2,
      leftover: 1,
    });
    expect(targetsMet(f)).toBe(false);
  });

  it('a notice stands for the unanswered message before the next answer; a message with neither is lost', () => {
    const notice = 'I could not process this message: every attempt crashed, so I gave up on it. Please send it again.';
    const f = figures([post('done s0-m1-aaaa'), post(notice)], 's0-m1-aaaa\ns0-m2-bbbb\nEND\n');
    expect(f.notices).toEqual([{ chatId: CHAT, text: notice, tokens: ['s0-m2-bbbb'] }]);
    expect({ lost: f.lost, sendAgainAfterWrite: f.sendAgainAfterWrite, answeredOnce: f.answeredOnce }).toEqual({
      lost: 1,
      sendAgainAfterWrite: 1,
      answeredOnce: 1,
    });
  });

  it('an orphan placeholder is counted apart and stands for no message: the message behind it is still lost', () => {
    const f = figures([post('done s0-m1-aaaa'), post(PLACEHOLDER), post('done s0-m3-cccc')], 's0-m1-aaaa\ns0-m2-bbbb\ns0-m3-cccc\nEND\n');
    expect({ orphans: f.orphanPlaceholders, notices: f.notices, lost: f.lost }).toEqual({ orphans: 1, notices: [], lost: 1 });
  });
});
