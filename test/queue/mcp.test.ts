import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { waitFor } from '../helpers/processes.js';
import { stdioEntry, writeMcpConfig } from '../fakes/mcp-harness.js';
import { ApprovalDesk } from '../../src/approvals/desk.js';
import type { ChatMessage } from '../../src/agent/types.js';
import type { RecordedRequest, Step } from '../fakes/openai-server.js';

/**
 * MCP tools in the whole pipeline: a worker process connects to the fake stdio MCP server of
 * MCP_CONFIG; the scripted model calls its tools; approvals, the filter and the journal apply.
 */
const ENV = { LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000', RECONCILE_INTERVAL_MS: '3600000' };

/** Calls fake__append_line once per turn, then answers with the last tool result it read. */
function appendingModel(req: RecordedRequest): Step {
  const messages = req.body.messages as ChatMessage[];
  const tool = [...messages].reverse().find((m) => m.role === 'tool');
  return tool
    ? { content: `result: ${String(tool.content)}` }
    : { content: 'Appending.', toolCalls: [{ name: 'fake__append_line', arguments: JSON.stringify({ line: 'the line' }) }] };
}

describe('MCP tools through the pipeline (worker processes, real Redis, a stdio MCP server)', () => {
  let h: PipelineHarness | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function setup(name: string, server: Record<string, unknown>, env: Record<string, string> = {}) {
    dir = await mkdtemp(join(tmpdir(), 'sb-mcp-'));
    const appended = join(dir, 'appended.txt');
    const config = await writeMcpConfig(dir, { fake: stdioEntry({ env: { FAKE_MCP_APPEND_FILE: appended, ...env }, ...server }) });
    h = await PipelineHarness.start(name, { env: { ...ENV, MCP_CONFIG: config } });
    h.fake.setHandler(appendingModel);
    const lines = async () => (await readFile(appended, 'utf8').catch(() => '')).split('\n').filter(Boolean);
    const posts = async () => (await h!.events('m')).filter((e) => e.type === 'post' && e.kind !== 'status').map((e) => (e.type === 'post' ? e.text : ''));
    return { h, lines, posts };
  }

  it("offers the server's tools as <server>__<tool> minus the excluded ones; an approval-listed tool waits for a click, then runs once", async () => {
    const { h, lines, posts } = await setup('mcp-approve', { approve: ['append_line'], tools: { exclude: ['env', 'pid'] } });
    await h.addWorkers(1);
    const m = await h.send('m', 'append a line');
    const card = await waitFor('the approval card', async () => {
      const e = (await h.events('m')).find((x) => x.type === 'approval');
      return e?.type === 'approval' ? e.card : undefined;
    });
    expect(card).toMatchObject({ tool: 'fake__append_line', args: '{"line":"the line"}' });
    expect(await lines()).toEqual([]);
    await new ApprovalDesk(h.redis, h.keys, h.queue).decide(card.id, 'approved', { platform: 'terminal', userId: 'tester', name: 'tester', chat: 'm' });
    await h.waitEnded(['m'], [m.id], 30_000);

    expect(await lines()).toEqual(['the line']);
    expect(await posts()).toEqual(['result: appended']);
    const offered = (h.fake.requests[0]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(['fake__lookup', 'fake__append_line', 'fake__sleep', 'list_files']));
    expect(offered).not.toContain('fake__env');
    expect(offered).not.toContain('fake__pid');
  }, 60_000);

  it('an approval-listed MCP tool that is denied does not run; the model reads who denied it', async () => {
    const { h, lines, posts } = await setup('mcp-deny', { approve: true });
    await h.addWorkers(1);
    const m = await h.send('m', 'append a line');
    const card = await waitFor('the approval card', async () => {
      const e = (await h.events('m')).find((x) => x.type === 'approval');
      return e?.type === 'approval' ? e.card : undefined;
    });
    await new ApprovalDesk(h.redis, h.keys, h.queue).decide(card.id, 'denied', { platform: 'terminal', userId: 'tester', name: 'tester', chat: 'm' });
    await h.waitEnded(['m'], [m.id], 30_000);
    expect(await lines()).toEqual([]);
    expect(await posts()).toEqual(['result: Error: not run: fake__append_line was denied by tester. Do not retry it; answer without it or ask the user.']);
  }, 60_000);

  it('a worker killed between the side-effecting call and its result: the line is written once and the model is told the call was interrupted', async () => {
    const { h, lines, posts } = await setup('mcp-kill', {}, { FAKE_MCP_APPEND_DELAY_MS: '5000' });
    const [first] = await h.addWorkers(1);
    const m = await h.send('m', 'append a line');
    await waitFor('the line written', async () => (await lines()).length === 1, 20_000);
    first!.kill('SIGKILL');
    await first!.exited;
    await h.addWorkers(1);
    await h.waitEnded(['m'], [m.id], 30_000);

    expect(await lines()).toEqual(['the line']);
    expect(await posts()).toEqual([expect.stringMatching(/^result: Error: interrupted: .*fake__append_line.*may or may not have taken effect/)]);
  }, 60_000);
});
