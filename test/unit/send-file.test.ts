import { mkdir, mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepJournal, StepRecord } from '../../src/agent/types.js';
import type { InboundMessage, OutboundAdapter, OutgoingFile } from '../../src/channels/types.js';
import type { WriteFailure } from '../../src/channels/kit/pieces.js';
import { createSendFileTool } from '../../src/run/delivery/send-file.js';
import { runToolCall } from '../../src/tools/run.js';
import { Workspace } from '../../src/tools/workspace.js';
import { startHarness } from '../agent/harness.js';

class PlatformError extends Error {
  constructor(
    readonly how: WriteFailure,
    message: string,
  ) {
    super(message);
  }
}

/** An outbound half that keeps what it was given to upload, or fails as told. */
class RecordingOutbound implements OutboundAdapter {
  readonly platform = 'telegram';
  readonly editIntervalMs = 0;
  readonly uploadMaxBytes = 1_000;
  readonly uploads: { to: string; file: OutgoingFile; bytes: string }[] = [];
  failWith: PlatformError | undefined;
  async post(): Promise<string[]> {
    return [];
  }
  async edit(): Promise<void> {}
  classifyWriteError(err: unknown): WriteFailure {
    return err instanceof PlatformError ? err.how : 'unknown';
  }
  async upload(to: InboundMessage, file: OutgoingFile): Promise<string> {
    if (this.failWith) throw this.failWith;
    this.uploads.push({ to: to.id, file, bytes: Buffer.from(await file.read()).toString() });
    return `m${this.uploads.length}`;
  }
}

const TO: InboundMessage = {
  v: 1,
  id: 'req-1',
  platform: 'telegram',
  conversation: '42',
  sender: { id: '42' },
  text: 'send it',
  attachments: [],
  eventId: 'e',
  receivedAt: 0,
};

describe('send_file', () => {
  let root: string;
  let ws: Workspace;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sb-sendfile-'));
    ws = new Workspace(join(root, 'ws'));
    await mkdir(join(root, 'ws', 'out', 'dir'), { recursive: true });
    await writeFile(join(root, 'ws', 'out', 'report.csv'), 'a,b\n1,2\n');
    await writeFile(join(root, 'ws', 'out', 'empty.txt'), '');
    await writeFile(join(root, 'ws', 'out', 'big.bin'), '');
    await truncate(join(root, 'ws', 'out', 'big.bin'), 1_001);
    await writeFile(join(root, 'secret.txt'), 'outside');
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const call = (out: RecordingOutbound, args: Record<string, unknown>) =>
    runToolCall([createSendFileTool(ws, out, TO)!], { name: 'send_file', arguments: JSON.stringify(args) }, new AbortController().signal);

  it('uploads the file with its name, type, size and trimmed caption to where the request came from', async () => {
    const out = new RecordingOutbound();
    const result = await call(out, { path: 'out/report.csv', caption: '  the numbers ' });
    expect(result).toMatchObject({ ok: true, content: 'Sent out/report.csv (8 B) into the conversation' });
    expect(out.uploads).toHaveLength(1);
    const [{ to, file, bytes }] = out.uploads as [RecordingOutbound['uploads'][0]];
    expect(to).toBe('req-1');
    expect({ name: file.name, path: file.path, size: file.size, mime: file.mime, caption: file.caption }).toEqual({
      name: 'report.csv',
      path: 'out/report.csv',
      size: 8,
      mime: 'text/csv',
      caption: 'the numbers',
    });
    expect(file.absolutePath).toBe(join(await ws.realRoot(), 'out', 'report.csv'));
    expect(bytes).toBe('a,b\n1,2\n');
  });

  it.each([
    ['over the platform limit', { path: 'out/big.bin' }, 'Error: out/big.bin is 1001 B; Telegram takes files up to 1000 B. Make it smaller'],
    ['empty', { path: 'out/empty.txt' }, 'Error: out/empty.txt is empty; there is nothing to send'],
    ['a directory', { path: 'out/dir' }, 'Error: out/dir is a directory'],
    ['missing', { path: 'out/nope.txt' }, 'Error: out/nope.txt does not exist'],
    ['outside the workspace', { path: '../secret.txt' }, 'Error: '],
    ['a caption too long', { path: 'out/report.csv', caption: 'x'.repeat(1001) }, 'Error: invalid arguments for send_file'],
  ])('%s: an error the model reads, nothing uploaded', async (_name, args, error) => {
    const out = new RecordingOutbound();
    const result = await call(out, args);
    expect(result.ok).toBe(false);
    expect(result.content.startsWith(error)).toBe(true);
    expect(out.uploads).toHaveLength(0);
  });

  it.each([
    ['refused', 'Error: Telegram refused out/report.csv: Forbidden: bot was blocked by the user'],
    [
      'unknown',
      'Error: the upload of out/report.csv may or may not have arrived (Forbidden: bot was blocked by the user); it was not sent again. Ask the person before sending it again.',
    ],
    ['retry', 'Error: out/report.csv was not sent (Forbidden: bot was blocked by the user); you may try once more'],
  ] as const)('a platform failure classified %s says what it means', async (how, content) => {
    const out = new RecordingOutbound();
    out.failWith = new PlatformError(how, 'Forbidden: bot was blocked by the user');
    expect((await call(out, { path: 'out/report.csv' })).content).toBe(content);
  });

  it('is not offered where the platform cannot upload, and is side-effecting (journaled, never re-run on a resume)', () => {
    const { upload: _upload, ...cannot } = new RecordingOutbound();
    expect(
      createSendFileTool(ws, { ...cannot, post: async () => [], edit: async () => {}, classifyWriteError: () => 'retry' } as OutboundAdapter, TO),
    ).toBeUndefined();
    expect(createSendFileTool(ws, new RecordingOutbound(), TO)!.readOnly).toBeUndefined();
  });
});

describe('send_file in a resumed run', () => {
  it('a call an earlier run started (its worker died mid-upload) is not uploaded again; the model is told', async () => {
    const h = await startHarness({ 'report.csv': 'a,b\n' });
    try {
      const out = new RecordingOutbound();
      h.tools.push(createSendFileTool(new Workspace(h.wsDir), out, TO)!);
      const args = JSON.stringify({ path: 'report.csv' });
      const recorded: StepRecord[] = [
        {
          t: 'model',
          step: 1,
          calls: 1,
          response: {
            message: {
              role: 'assistant',
              content: 'Sending.',
              tool_calls: [{ id: 'call_f', type: 'function', function: { name: 'send_file', arguments: args } }],
            },
            stopReason: 'toolUse',
            usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
          },
        },
        { t: 'tool_start', step: 1, callId: 'call_f', name: 'send_file', args },
      ];
      const journal: StepJournal = { recorded, record: () => {}, flush: async () => {} };
      h.fake.script([{ content: 'I could not confirm the file arrived.' }]);
      const { outcome } = await h.run('send me the report', { journal });
      expect(outcome.state).toBe('completed');
      expect(out.uploads).toHaveLength(0);
      const tool = (h.fake.requests[0]!.body.messages as { role: string; content: string }[]).find((m) => m.role === 'tool')!;
      expect(tool.content).toMatch(/^Error: .*interrupted/);
    } finally {
      await h.close();
    }
  });
});
