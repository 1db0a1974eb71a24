import { mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { UPLOAD_MAX_BYTES } from '../../../src/channels/telegram/outbound.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { workspaceFolderName } from '../../../src/tools/workspace.js';
import { BOT_USERNAME } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers/processes.js';
import { TelegramHarness } from './harness.js';

const lastUserIndex = (messages: ChatMessage[]) => messages.map((m) => m.role).lastIndexOf('user');

/** The tool result the model was given in this turn (after the last user message), if any. */
function toolResultOfTurn(messages: ChatMessage[]): string | undefined {
  const tool = messages.slice(lastUserIndex(messages)).find((m) => m.role === 'tool');
  return tool === undefined ? undefined : String(tool.content);
}

describe('telegram: the send_file tool uploads a workspace file, through the real roles', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-send-file');
    // "send <path>" → the model calls send_file on it, then answers with the result it read.
    h.stack.fake.setHandler((req) => {
      const messages = req.body.messages as ChatMessage[];
      const result = toolResultOfTurn(messages);
      if (result !== undefined) return { content: `result: ${result}` };
      const path = /send (\S+)/.exec(String(messages[lastUserIndex(messages)]?.content))?.[1] ?? 'missing';
      return { content: 'Sending it.', toolCalls: [{ name: 'send_file', arguments: JSON.stringify({ path, caption: `here is ${path}` }) }] };
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  async function workspaceOf(conversation: number, thread?: string): Promise<string> {
    const ws = join(
      h.stack.workspaceRoot,
      workspaceFolderName(sessionKeyOf({ platform: 'telegram', conversation: String(conversation), ...(thread !== undefined && { thread }) })),
    );
    await mkdir(ws, { recursive: true });
    return ws;
  }

  const finalAnswers = (chat: number) => h.answers(chat).filter((c) => String(c.body.text).startsWith('result:'));
  const uploadsTo = (chat: number) => h.callsFor(chat).filter((c) => c.method === 'sendDocument' || c.method === 'sendPhoto');
  /** The model requests that carried a tool result, in order. */
  const toolResults = () => h.stack.fake.requests.map((r) => toolResultOfTurn(r.body.messages as ChatMessage[])).filter((t): t is string => t !== undefined);

  it('in a forum topic: the file arrives once with its bytes and caption, replying to the request in the topic; the model reads "Sent …"', async () => {
    const chat = -100_3001;
    const topic = 77;
    const content = 'line one\nline two\n';
    await writeFile(join(await workspaceOf(chat, String(topic)), 'report.txt'), content);
    const before = h.stack.fake.requests.length;

    const text = `@${BOT_USERNAME} send report.txt`;
    const request = h.group(chat, text, {
      entities: [{ type: 'mention', offset: 0, length: BOT_USERNAME.length + 1 }],
      message_thread_id: topic,
      is_topic_message: true,
    });
    await waitFor('the answer', () => finalAnswers(chat).length === 1, 20_000);

    const offered = (h.stack.fake.requests[before]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(offered).toContain('send_file');
    const files = h.tg.sent.filter((m) => m.chatId === chat && m.file);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatchObject({ threadId: topic, replyTo: request.messageId, text: 'here is report.txt' });
    expect(files[0]!.file).toMatchObject({ kind: 'document', name: 'report.txt', mime: 'text/plain' });
    expect(Buffer.from(files[0]!.file!.bytes).toString('utf8')).toBe(content);

    expect(toolResults().slice(-1)[0]).toMatch(/^Sent report\.txt \(18 B\) into the conversation$/);
    const [answer] = finalAnswers(chat);
    expect(answer!.body.text).toBe('result: Sent report.txt (18 B) into the conversation');
    expect(answer!.body).toMatchObject({ message_thread_id: topic, reply_parameters: { message_id: request.messageId } });
    await waitFor('the status message removed', () => h.callsFor(chat).some((c) => c.method === 'deleteMessage'));
    expect(uploadsTo(chat)).toHaveLength(1);
    expect(finalAnswers(chat)).toHaveLength(1);
  }, 30_000);

  it("a file over Telegram's 50 MB: nothing is uploaded, the model reads an error naming the limit, the answer still arrives once", async () => {
    const chat = 3002;
    const big = await open(join(await workspaceOf(chat), 'big.bin'), 'w');
    await big.truncate(UPLOAD_MAX_BYTES + 1); // sparse: no bytes are written
    await big.close();

    h.dm(chat, 'send big.bin');
    await waitFor('the answer', () => finalAnswers(chat).length === 1, 20_000);

    const result = toolResults().slice(-1)[0]!;
    expect(result).toMatch(/^Error: big\.bin is 50 MB; Telegram takes files up to 50 MB\./);
    expect(finalAnswers(chat).map((c) => c.body.text)).toEqual([`result: ${result}`]);
    expect(uploadsTo(chat)).toEqual([]);
    expect(h.tg.sent.filter((m) => m.file && m.chatId === chat)).toEqual([]);
  }, 30_000);
});
