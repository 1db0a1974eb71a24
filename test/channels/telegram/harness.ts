import { startStack, type Stack } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/processes.js';
import { BOT_ID, BOT_USERNAME, startFakeTelegram, TOKEN, type FakeTelegram, type RecordedCall } from '../../fakes/telegram-server.js';
import type { ChatMessage } from '../../../src/agent/types.js';
import { PLACEHOLDER } from '../../../src/channels/kit/pieces.js';

export const ADA = { id: 4242, is_bot: false, first_name: 'Ada', username: 'ada' };
export const BOB = { id: 4343, is_bot: false, first_name: 'Bob' };
export const BOT_FROM = { id: BOT_ID, is_bot: true, first_name: 'Switchboard', username: BOT_USERNAME };

/**
 * The real gateway and worker roles (startStack: real Redis, fake model) with the Telegram channel
 * pointed at a fake Bot API through TELEGRAM_API_ROOT; waits until the bot is identified and
 * receiving.
 */
export class TelegramHarness {
  private constructor(
    readonly stack: Stack,
    readonly tg: FakeTelegram,
  ) {}

  static async start(name: string, env: Record<string, string> = {}): Promise<TelegramHarness> {
    const tg = await startFakeTelegram();
    const stack = await startStack(name, { TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: tg.apiRoot, ...env });
    const h = new TelegramHarness(stack, tg);
    await waitFor('the telegram channel to connect', () => h.channel().health().connected);
    return h;
  }

  channel() {
    const c = this.stack.gateway.channels.find((x) => x.name === 'telegram');
    if (!c) throw new Error('the telegram channel is not running');
    return c;
  }

  /** A user's DM, as an update for getUpdates (or to post to the webhook). */
  dmUpdate(chatId: number, text: string, extra: Record<string, unknown> = {}) {
    return { message: this.tg.message({ chat: { id: chatId, type: 'private' }, from: { ...ADA, id: chatId }, text, ...extra }) };
  }

  dm(chatId: number, text: string, extra: Record<string, unknown> = {}): number {
    return this.tg.pushUpdate(this.dmUpdate(chatId, text, extra));
  }

  group(chatId: number, text: string, extra: Record<string, unknown> = {}): { updateId: number; messageId: number } {
    const message = this.tg.message({ chat: { id: chatId, type: 'supergroup', title: 'Team' }, from: BOB, text, ...extra });
    return { updateId: this.tg.pushUpdate({ message }), messageId: message.message_id };
  }

  /** Bot API calls made for one chat, in order. */
  callsFor(chatId: number): RecordedCall[] {
    return this.tg.calls.filter((c) => Number(c.body?.chat_id) === chatId);
  }

  /**
   * Answers and notices posted in a chat (not status messages), successfully, in order. A piece
   * posted as a placeholder and edited into the piece (a journaled reply) is its sendMessage with
   * the body of its first edit; a placeholder not (yet) filled is not an answer.
   */
  answers(chatId: number): RecordedCall[] {
    const calls = this.callsFor(chatId);
    return calls
      .filter((c) => c.method === 'sendMessage' && c.error === undefined && c.body.disable_notification !== true)
      .flatMap((c) => {
        if (c.body.text !== PLACEHOLDER) return [c];
        const fill = calls.find((e) => e.method === 'editMessageText' && e.error === undefined && Number(e.body.message_id) === c.messageId);
        if (!fill) return [];
        const { message_id: _id, ...edit } = fill.body;
        const { text: _text, parse_mode: _mode, ...placed } = c.body;
        return [{ ...c, body: { ...placed, ...edit } }];
      });
  }

  /** Placeholders posted in a chat that were never edited into a piece (orphans of a worker killed mid-post). */
  orphans(chatId: number): number {
    return this.tg.sent.filter((m) => m.chatId === chatId && !m.deleted && m.raw === PLACEHOLDER && m.edits === 0).length;
  }

  /** The user texts of each model request, in order. */
  userTexts(): string[][] {
    return this.stack.fake.requests.map((r) => (r.body.messages as ChatMessage[]).filter((m) => m.role === 'user').map((m) => String(m.content)));
  }

  async close(): Promise<void> {
    await this.stack.close();
    await this.tg.close();
  }
}
