import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRIVATE_CHAT_GAP_MS } from '../../../src/channels/telegram/outbound.js';
import { waitFor } from '../../helpers/processes.js';
import { TelegramHarness } from './harness.js';
import { PLACEHOLDER } from '../../../src/channels/kit/pieces.js';

/** Three messages' worth: the stream posts more than one message and the final text edits and posts pieces. */
const LONG_ANSWER = Array.from({ length: 90 }, (_, i) => `Paragraph ${i + 1}: a long streamed answer that needs more than one Telegram message to show.`).join(
  '\n\n',
);
/** The fake's clock and the worker's are one Date.now(); a few ms cover the request's way in. */
const TOLERANCE_MS = 15;
/** Every call that writes a message to the chat. */
const WRITES = new Set(['sendMessage', 'editMessageText', 'sendMessageDraft', 'sendPhoto', 'sendDocument']);

describe('telegram: every send and edit to one chat, final ones included, waits for the chat pacer', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-pacing', { AGENT_MODEL_RETRIES: '2' });
  });
  afterAll(async () => {
    await h?.close();
  });

  const ended = (chat: number, ms: number) =>
    waitFor(
      'the run to end',
      async () =>
        (await h.stack.redis.get(h.stack.keys.last(`telegram:${chat}`))) !== null &&
        (await h.stack.redis.exists(h.stack.keys.outbox(`telegram:${chat}`))) === 0,
      ms,
    );

  /**
   * The smallest distance of a write from its turn: each write comes a gap after the one before,
   * except a placeholder's edit into its piece, which rides on the placeholder's turn (sent at once)
   * and makes the next write wait two gaps from the placeholder (ConversationPacer.rideOn).
   */
  const smallestGap = (chat: number): { gap: number; between: string; rides: number } => {
    const calls = h.callsFor(chat).filter((c) => WRITES.has(c.method));
    let best = { gap: Infinity, between: '', rides: 0 };
    let turnAt = -Infinity;
    for (let i = 0; i < calls.length; i++) {
      const [prev, call] = [calls[i - 1], calls[i]!];
      const rides =
        prev !== undefined && prev.body.text === PLACEHOLDER && call.method === 'editMessageText' && Number(call.body.message_id) === prev.messageId;
      if (rides) {
        best.rides++;
        turnAt = prev.at + 2 * PRIVATE_CHAT_GAP_MS;
        continue;
      }
      const gap = call.at - (turnAt - PRIVATE_CHAT_GAP_MS);
      if (i > 0 && gap < best.gap) best = { ...best, gap, between: `${prev!.method} → ${call.method} (call ${i})` };
      turnAt = call.at + PRIVATE_CHAT_GAP_MS;
    }
    return best;
  };

  it('a private chat: status, a streamed answer of several messages and its final pieces are all ≥ the private-chat gap apart', {
    timeout: 90_000,
  }, async () => {
    const chat = 4190;
    // Narration steps close together (status posted, then edited), then an answer streamed over several messages.
    h.stack.fake.script([
      { content: 'Let me look at the files.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }] },
      { content: 'And once more, quickly.', toolCalls: [{ name: 'list_files', arguments: '{"path":"."}' }], delayMs: 200 },
      { content: LONG_ANSWER, chunks: 10, chunkDelayMs: 400, delayMs: 200 },
    ]);
    h.dm(chat, 'write a very long answer');
    await ended(chat, 80_000);
    await sleep(300);

    const writes = h.callsFor(chat).filter((c) => WRITES.has(c.method));
    // Several messages were written: the answer does not fit one.
    expect(writes.filter((c) => c.method === 'sendMessage' && c.body.disable_notification !== true).length).toBeGreaterThanOrEqual(3);
    // …and a status message was posted and edited in the same chat.
    const status = writes.find((c) => c.method === 'sendMessage' && c.body.disable_notification === true);
    expect(status).toBeDefined();
    const smallest = smallestGap(chat);
    console.log(
      `smallest gap between writes to chat ${chat}: ${smallest.gap} ms, ${smallest.between}; ${writes.map((c) => `${c.method}${c.body.disable_notification === true ? '(status)' : ''}@${c.at - writes[0]!.at}`).join(' ')}`,
    );
    expect(smallest.gap, smallest.between).toBeGreaterThanOrEqual(PRIVATE_CHAT_GAP_MS - TOLERANCE_MS);
  });
});
