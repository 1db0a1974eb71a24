import { mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { SLACK_UPLOAD_MAX_BYTES } from '../../../src/channels/slack/upload.js';
import { formatBytes } from '../../../src/lib/text.js';
import { workspaceFolderName } from '../../../src/tools/workspace.js';
import type { RecordedRequest } from '../../fakes/openai-server.js';
import { startFakeSlack, type FakeSlack } from '../../fakes/slack-server.js';
import type { Stack } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/processes.js';
import { appMention, eventCallback, nextTs, postEvent, startSlackStack } from './helpers.js';

const CHANNEL = 'C0FILES';
const CAPTION = 'Q3 <numbers> & notes';

/** The model sends the file the user named (huge.bin or report.csv), then answers with the tool's result. */
function scriptModel(stack: Stack): void {
  stack.fake.setHandler((req) => {
    const messages = req.body.messages as ChatMessage[];
    const last = messages.at(-1)!;
    if (last.role === 'tool') return { content: `result: ${String(last.content)}` };
    const path = String(last.content).includes('huge.bin') ? 'huge.bin' : 'report.csv';
    return { content: 'Sending it.', toolCalls: [{ name: 'send_file', arguments: JSON.stringify({ path, caption: CAPTION }) }] };
  });
}

/** The workspace of the thread a top-level mention at `ts` starts. */
async function threadWorkspace(stack: Stack, ts: string): Promise<string> {
  const dir = join(stack.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'slack', conversation: CHANNEL, thread: ts })));
  await mkdir(dir, { recursive: true });
  return dir;
}

/** The tool result the model read in the request after its send_file call for `path` (OpenAI wire format). */
function toolResultSeen(stack: Stack, path: string): string | undefined {
  type Wire = { role: string; content?: unknown; tool_calls?: { function: { name: string; arguments: string } }[] };
  const req = stack.fake.requests.find((r: RecordedRequest) => {
    const messages = r.body.messages as Wire[];
    const call = messages.at(-2)?.tool_calls?.[0]?.function;
    return messages.at(-1)?.role === 'tool' && call?.name === 'send_file' && JSON.parse(call.arguments).path === path;
  });
  return req ? String((req.body.messages as Wire[]).at(-1)!.content) : undefined;
}

const resultsIn = (slack: FakeSlack, thread: string) =>
  slack.messages.filter((m) => m.channel === CHANNEL && m.thread_ts === thread && m.text.startsWith('result:'));
/** The answer, once the run is over (the ✅ on the user's message comes after the delivery). */
async function answerIn(slack: FakeSlack, thread: string) {
  await waitFor('the run to end', () => slack.reactions.get(`${CHANNEL}:${thread}`)?.includes('white_check_mark'), 15_000);
  return resultsIn(slack, thread)[0]!;
}

describe('slack: the send_file tool through the real roles (signed events → worker → files.uploadV2 on the fake)', () => {
  let slack: FakeSlack;
  let stack: Stack;

  beforeAll(async () => {
    slack = await startFakeSlack();
    stack = await startSlackStack('slack-send-file', slack);
    scriptModel(stack);
  });
  afterAll(async () => {
    await stack?.close();
    await slack?.close();
  });

  it('a file the model sends arrives once in the thread, with its bytes and caption; the model reads "Sent …"', async () => {
    const ts = nextTs();
    const content = 'quarter,revenue\nQ3,42\n';
    await writeFile(join(await threadWorkspace(stack, ts), 'report.csv'), content);
    expect((await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'send me report.csv')))).status).toBe(200);
    const answer = await answerIn(slack, ts);

    const offered = (stack.fake.requests[0]!.body.tools as { function: { name: string; description: string } }[]).find((t) => t.function.name === 'send_file');
    expect(offered?.function.description).toContain(`Slack takes up to ${formatBytes(SLACK_UPLOAD_MAX_BYTES)}`);
    expect(slack.uploads).toHaveLength(1);
    const [shared] = slack.uploads;
    expect(shared).toMatchObject({
      filename: 'report.csv',
      title: 'report.csv',
      channel_id: CHANNEL,
      thread_ts: ts,
      initial_comment: 'Q3 &lt;numbers&gt; &amp; notes',
    });
    expect(new TextDecoder().decode(shared!.bytes)).toBe(content);
    expect(slack.callsOf('files.completeUploadExternal', true)).toHaveLength(1);

    const sent = `Sent report.csv (${formatBytes(content.length)}) into the conversation`;
    expect(toolResultSeen(stack, 'report.csv')).toBe(sent);
    expect(answer.text).toBe(`result: ${sent}`);
    expect(resultsIn(slack, ts)).toHaveLength(1);
  }, 30_000);

  it('a file over Slack’s limit is not uploaded: the model reads an error naming the limit, and the answer still arrives once', async () => {
    const ts = nextTs();
    const before = slack.callsOf('files.getUploadURLExternal', true).length;
    // Sparse: the size is over the limit, no bytes are written.
    const handle = await open(join(await threadWorkspace(stack, ts), 'huge.bin'), 'w');
    await handle.truncate(SLACK_UPLOAD_MAX_BYTES + 1);
    await handle.close();
    expect((await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'send me huge.bin')))).status).toBe(200);
    const answer = await answerIn(slack, ts);

    const result = toolResultSeen(stack, 'huge.bin');
    expect(result).toMatch(/^Error: /);
    expect(result).toContain(`Slack takes files up to ${formatBytes(SLACK_UPLOAD_MAX_BYTES)}`);
    expect(answer.text).toBe(`result: ${result}`);
    expect(slack.callsOf('files.getUploadURLExternal', true)).toHaveLength(before);
    expect(slack.uploads).toHaveLength(1);
    expect(resultsIn(slack, ts)).toHaveLength(1);
  }, 30_000);
});
