import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER } from '../../../src/channels/kit/pieces.js';
import { startFakeTelegram, TOKEN, type FakeTelegram, type RecordedCall } from '../../fakes/telegram-server.js';
import { KillRig, type Holds } from '../../helpers/kill-rig.js';

// A worker process killed between marking an answer's piece started and Telegram's answer, at
// each point of the placeholder's two writes: the next worker makes exactly one answer visible.
// Telegram's sendMessage has no idempotency key and a chat cannot be listed, so the piece is
// posted as a placeholder (its id journaled) and edited into it (see src/channels/kit/pieces.ts).
describe('telegram: a worker killed while posting an answer (real processes, SIGKILL)', () => {
  let tg: FakeTelegram;
  let rig: KillRig;
  let holds: Holds<RecordedCall>;

  beforeAll(async () => {
    tg = await startFakeTelegram();
    holds = { requests: (h) => tg.holdRequests(h), responses: (h) => tg.holdResponses(h) };
    rig = await KillRig.start('tgkill', { TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: tg.apiRoot }, () => tg.pendingPolls() > 0);
  }, 90_000);

  afterAll(async () => {
    await rig?.close();
    await tg?.close();
  });

  /** What the person sees in the chat: the bot's messages, status messages and placeholders apart. */
  const visible = (chat: number) => tg.sent.filter((m) => m.chatId === chat && !m.silent && !m.deleted && m.raw !== PLACEHOLDER).map((m) => m.text);
  const orphans = (chat: number) => tg.sent.filter((m) => m.chatId === chat && !m.deleted && m.raw === PLACEHOLDER).length;
  const dm = (chat: number) => () =>
    void tg.pushUpdate({
      message: tg.message({ chat: { id: chat, type: 'private' }, from: { id: chat, is_bot: false, first_name: 'Ada' }, text: `question ${chat}` }),
    });
  const killAt = (chat: number, at: 'request' | 'response', when: (c: RecordedCall) => boolean) =>
    rig.killAt(
      holds,
      at,
      (c) => Number(c.body?.chat_id) === chat && when(c),
      dm(chat),
      () => visible(chat).length > 0,
    );

  const placeholder = (c: RecordedCall) => c.method === 'sendMessage' && c.body.text === PLACEHOLDER;
  const fill = (c: RecordedCall) => c.method === 'editMessageText' && String(c.body.text).startsWith('answer to');

  it('killed before the placeholder reached Telegram: one answer, nothing orphaned', async () => {
    const chat = 71_001;
    await killAt(chat, 'request', placeholder);
    expect(tg.calls.some((c) => c.dropped && placeholder(c))).toBe(true);
    expect(visible(chat)).toEqual([`answer to question ${chat}`]);
    expect(orphans(chat)).toBe(0);
  }, 120_000);

  it('killed after Telegram stored the placeholder, before its id came back: one answer, one orphan "…"', async () => {
    const chat = 71_002;
    await killAt(chat, 'response', placeholder);
    expect(visible(chat)).toEqual([`answer to question ${chat}`]);
    expect(orphans(chat)).toBe(1);
  }, 120_000);

  it('killed before the edit into the placeholder reached Telegram: one answer, in the placeholder', async () => {
    const chat = 71_003;
    await killAt(chat, 'request', fill);
    expect(visible(chat)).toEqual([`answer to question ${chat}`]);
    expect(orphans(chat)).toBe(0);
  }, 120_000);

  it('killed after Telegram made the edit, before it was confirmed: one answer; the repeated edit changes nothing', async () => {
    const chat = 71_004;
    await killAt(chat, 'response', fill);
    expect(visible(chat)).toEqual([`answer to question ${chat}`]);
    expect(orphans(chat)).toBe(0);
    expect(tg.sent.filter((m) => m.chatId === chat && !m.silent).map((m) => m.edits)).toEqual([1]);
  }, 120_000);
});
