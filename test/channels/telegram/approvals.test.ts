import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { workspaceFolderName } from '../../../src/tools/workspace.js';
import type { BotMessage } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers/processes.js';
import { ADA, BOB, TelegramHarness } from './harness.js';

const APPEND = { name: 'edit_file', arguments: JSON.stringify({ path: 'log.txt', old_text: 'END', new_text: 'line-1\nEND' }) };

describe('telegram: approval cards with an inline keyboard (grammY callback queries against the fake)', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-approvals', { TOOLS_APPROVE: 'edit_file' });
    h.stack.fake.setHandler((req) => {
      const messages = req.body.messages as ChatMessage[];
      const tool = [...messages].reverse().find((m) => m.role === 'tool');
      const lastUser = [...messages].reverse().findIndex((m) => m.role === 'user');
      const lastTool = [...messages].reverse().findIndex((m) => m.role === 'tool');
      return tool && lastTool < lastUser ? { content: `result: ${String(tool.content)}` } : { content: 'I will append the line.', toolCalls: [APPEND] };
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  async function workspace(chat: number): Promise<() => Promise<string>> {
    const ws = join(h.stack.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'telegram', conversation: String(chat) })));
    await mkdir(ws, { recursive: true });
    await writeFile(join(ws, 'log.txt'), 'END');
    return () => readFile(join(ws, 'log.txt'), 'utf8');
  }

  const cardIn = (chat: number) => waitFor('the approval card', () => h.tg.sent.find((m) => m.chatId === chat && m.keyboard !== undefined), 15_000);
  const buttons = new Map<BotMessage, string[]>();
  /** A press of the card's button as it was shown (a late press on a decided card carries the same data). */
  const press = (who: typeof ADA, card: BotMessage, decision: 'y' | 'n') => {
    if (!buttons.has(card))
      buttons.set(
        card,
        card.keyboard![0]!.map((b) => b.callback_data!),
      );
    return h.tg.pressButton(who, card, buttons.get(card)![decision === 'y' ? 0 : 1]!);
  };
  const answerOf = (query: string) => waitFor('the button answer', () => h.tg.callbackAnswers.get(query), 10_000);

  it("approve: the card shows the exact call; a stranger is refused privately; the requester's press runs it once and the card shows who decided", async () => {
    const chat = ADA.id;
    const log = await workspace(chat);
    h.dm(chat, 'append a line');
    const card = await cardIn(chat);
    expect(card.text).toContain('Call edit_file with these arguments?');
    expect(card.text).toContain('"new_text": "line-1\\nEND"');
    expect(card.keyboard![0]!.map((b) => b.text)).toEqual(['Approve', 'Deny']);

    expect(await answerOf(press({ ...BOB, id: 5151, username: 'bob' }, card, 'y'))).toEqual({
      text: 'Only the person who asked, or an approver, can decide this.',
    });
    expect(await log()).toBe('END');
    expect(await answerOf(press({ ...ADA, id: chat }, card, 'y'))).toEqual({ text: 'Approved: the run goes on.' });
    await waitFor('the answer', () => h.answers(chat).find((c) => String(c.body.text).startsWith('result:')), 15_000);

    expect(await log()).toBe('line-1\nEND');
    expect(
      h
        .answers(chat)
        .filter((c) => String(c.body.text).startsWith('result:'))
        .map((c) => c.body.text),
    ).toEqual([expect.stringMatching(/^result: Edited log.txt/)]);
    expect(card.keyboard).toBeUndefined();
    expect(card.text).toMatch(/✅ Approved by @ada at \d\d:\d\d UTC/);
    expect(card.edits).toBe(1);
    expect(await answerOf(press({ ...ADA, id: chat }, card, 'n'))).toEqual({ text: 'Already decided: approved by @ada.' });
  }, 40_000);

  it('deny: the call does not run and the model reads who denied it', async () => {
    const chat = 4444;
    const log = await workspace(chat);
    h.dm(chat, 'append a line');
    const card = await cardIn(chat);
    expect(await answerOf(press({ ...ADA, id: chat }, card, 'n'))).toEqual({ text: 'Denied: the call will not run.' });
    const answer = await waitFor('the answer', () => h.answers(chat).find((c) => String(c.body.text).startsWith('result:')), 15_000);
    expect(answer.body.text).toBe('result: Error: not run: edit_file was denied by @ada. Do not retry it; answer without it or ask the user.');
    expect(await log()).toBe('END');
    expect(card.text).toMatch(/❌ Denied by @ada/);
  }, 40_000);
});
