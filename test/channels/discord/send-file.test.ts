import { mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { UPLOAD_MAX_BYTES } from '../../../src/channels/discord/ids.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { workspaceFolderName } from '../../../src/tools/workspace.js';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction, type FakeMessage } from '../../fakes/discord-server.js';
import { waitFor } from '../../helpers/processes.js';
import { startStack, type Stack } from '../../helpers/stack.js';

/**
 * send_file through the real roles: the real discord.js gateway client and the worker's REST
 * adapter against the fake Discord, real Redis, and a fake model that asks for a workspace file
 * and then answers with what the tool told it.
 */

let fake: FakeDiscord;
let stack: Stack;

/** The file each request names (by its words), and the model's answer once the tool has answered. */
const ASKS: Record<string, { path: string; caption?: string }> = {
  'send the report': { path: 'out/report.csv', caption: 'This week, @everyone' },
  'send the dump': { path: 'dump.bin' },
};

beforeAll(async () => {
  // Discord's deprecated rule on: a follow-up while the command still shows "is thinking…" would become its response.
  fake = await startFakeDiscord({ followupEditsDeferred: true });
  stack = await startStack('dc-send-file', fake.env());
  const channel = stack.gateway.channels.find((c) => c.name === 'discord')!;
  await waitFor('the Discord gateway to be ready', () => channel.health().connected, 15_000);
  stack.fake.setHandler((req) => {
    const messages = req.body.messages as ChatMessage[];
    const lastUser = messages.findLastIndex((m) => m.role === 'user');
    const tool = messages.slice(lastUser).find((m) => m.role === 'tool');
    if (tool) return { content: `done: ${String(tool.content)}` };
    const ask = Object.entries(ASKS).find(([words]) => String(messages[lastUser]!.content).includes(words));
    return { content: '', toolCalls: [{ name: 'send_file', arguments: JSON.stringify(ask![1]) }] };
  });
}, 30_000);
afterAll(async () => {
  await stack?.close();
  await fake?.close();
});

/** A channel's workspace (a Discord thread is a session of its own, keyed by its channel id). */
async function workspace(channel = fake.ids.thread): Promise<string> {
  const ws = join(stack.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'discord', conversation: channel })));
  await mkdir(join(ws, 'out'), { recursive: true });
  return ws;
}

/** Alice mentions the bot in the thread; resolves with the answer once the turn's job completed. */
async function ask(words: string): Promise<{ asked: FakeMessage; answer: FakeMessage }> {
  const jobsBefore = (await stack.queue.getJobs(['completed'])).length;
  const asked = fake.userMessage({ channel: fake.ids.thread, content: `<@${fake.ids.app}> ${words}` });
  const answer = await waitFor(
    'the answer',
    () => fake.botMessages(fake.ids.thread).find((m) => m.message_reference?.message_id === asked.id && m.content.startsWith('done:')),
    20_000,
  );
  await waitFor('the completed job', async () => (await stack.queue.getJobs(['completed'])).length > jobsBefore, 10_000);
  return { asked, answer: answer! };
}

/** What the model read back from send_file in the turn that answered `words`. */
function toolResult(words: string): string {
  const req = stack.fake.requests.find((r) => {
    const messages = r.body.messages as ChatMessage[];
    return String(messages.findLast((m) => m.role === 'user')?.content).includes(words) && messages.at(-1)?.role === 'tool';
  });
  return String((req!.body.messages as ChatMessage[]).at(-1)!.content);
}

const uploads = () => fake.requests.filter((r) => r.files.length > 0);

describe('Discord: send_file', () => {
  it('a workspace file arrives in the thread once, as a reply with its bytes and caption; the model reads "Sent …"', async () => {
    const ws = await workspace();
    const bytes = 'day,total\nmon,3\ntue,5\n';
    await writeFile(join(ws, 'out', 'report.csv'), bytes);

    const { asked, answer } = await ask('send the report');

    const first = stack.fake.requests.find((r) => String((r.body.messages as ChatMessage[]).at(-1)?.content).includes('send the report'))!;
    expect(
      (first.body.tools as { function: { name: string; description: string } }[]).find((t) => t.function.name === 'send_file')?.function.description,
    ).toContain('Discord takes up to 10 MB');
    const withFile = fake.botMessages(fake.ids.thread).filter((m) => m.attachments.length > 0);
    expect(withFile).toHaveLength(1);
    expect(withFile[0]).toMatchObject({ via: 'channel', content: 'This week, @everyone', pings: [], message_reference: { message_id: asked.id } });
    expect(withFile[0]!.attachments.map((a) => [a.filename, a.content_type, a.bytes.toString()])).toEqual([['report.csv', 'text/csv', bytes]]);
    expect(uploads()).toHaveLength(1);
    expect(toolResult('send the report')).toBe(`Sent out/report.csv (${bytes.length} B) into the conversation`);
    // The answer still arrives once, after the file.
    expect(answer.content).toBe(`done: Sent out/report.csv (${bytes.length} B) into the conversation`);
    expect(fake.botMessages(fake.ids.thread).filter((m) => m.content.startsWith('done:'))).toHaveLength(1);
    expect(BigInt(answer.id) > BigInt(withFile[0]!.id)).toBe(true);
  }, 40_000);

  it("a file over Discord's 10 MiB is not uploaded: the model reads an error naming the limit, and still answers once", async () => {
    const ws = await workspace();
    // Sparse: 10 MiB + 1 byte long, with no bytes written.
    const handle = await open(join(ws, 'dump.bin'), 'w');
    await handle.truncate(UPLOAD_MAX_BYTES + 1);
    await handle.close();
    const uploadsBefore = uploads().length;

    const { answer } = await ask('send the dump');

    expect(uploads()).toHaveLength(uploadsBefore);
    const result = toolResult('send the dump');
    expect(result.startsWith('Error:')).toBe(true);
    expect(result).toContain('Discord takes files up to 10 MB');
    expect(answer.content).toBe(`done: ${result}`);
    expect(fake.botMessages(fake.ids.thread).filter((m) => m.content.startsWith('done: Error:'))).toHaveLength(1);
    expect(fake.botMessages(fake.ids.thread).filter((m) => m.attachments.some((a) => a.filename === 'dump.bin'))).toEqual([]);
  }, 40_000);

  it('/ask: the file is a follow-up of the command, its response becomes the answer', async () => {
    const ws = await workspace(fake.ids.general);
    await writeFile(join(ws, 'out', 'report.csv'), 'a,b\n');
    const jobsBefore = (await stack.queue.getJobs(['completed'])).length;
    const ix: FakeInteraction = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'send the report' });
    const original = () => fake.messages.find((m) => m.id === ix.originalId);
    await waitFor('the answer', () => original()?.content.startsWith('done:'), 20_000);
    await waitFor('the completed job', async () => (await stack.queue.getJobs(['completed'])).length > jobsBefore, 10_000);

    const files = ix.followups.map((id) => fake.messages.find((m) => m.id === id)!);
    expect(files.map((m) => [m.content, m.attachments.map((a) => a.bytes.toString())])).toEqual([['This week, @everyone', ['a,b\n']]]);
    expect(files[0]!.pings).toEqual([]);
    expect(original()).toMatchObject({ content: 'done: Sent out/report.csv (4 B) into the conversation', attachments: [] });
    expect(fake.calls('POST', new RegExp(`^/channels/${fake.ids.general}/messages$`))).toEqual([]);
  }, 40_000);
});
