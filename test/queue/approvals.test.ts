import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { waitFor } from '../helpers/processes.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';
import { ApprovalDesk } from '../../src/approvals/desk.js';
import { SessionControl } from '../../src/session/control.js';
import type { ApprovalCard } from '../../src/channels/types.js';
import type { ChatMessage } from '../../src/agent/types.js';
import type { RecordedRequest, Step } from '../fakes/openai-server.js';

/**
 * Approvals through the terminal channel, with real Redis and worker processes: the run parks
 * (no worker slot held), a decision wakes it, and it resumes from the journal on any worker.
 */
const ENV = { LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000', RECONCILE_INTERVAL_MS: '3600000', TOOLS_APPROVE: 'edit_file' };
const APPEND = { name: 'edit_file', arguments: JSON.stringify({ path: 'log.txt', old_text: 'END', new_text: 'line-1\nEND' }) };

/** A model that asks to append a line, then answers with the tool result it read. */
function appendingModel(req: RecordedRequest): Step {
  const messages = req.body.messages as ChatMessage[];
  const user = String([...messages].reverse().find((m) => m.role === 'user')?.content ?? '');
  if (!user.startsWith('append')) return { content: `ack ${user}` };
  const tool = [...messages].reverse().find((m) => m.role === 'tool');
  return tool ? { content: `result: ${String(tool.content)}` } : { content: 'I will append the line.', toolCalls: [APPEND] };
}

describe('approvals (terminal channel, worker processes, real Redis)', () => {
  let h: PipelineHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function setup(name: string, env: Record<string, string> = {}) {
    const harness = await PipelineHarness.start(name, { env: { ...ENV, ...env } });
    h = harness;
    harness.fake.setHandler(appendingModel);
    const ws = join(harness.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'terminal', conversation: 'a' })));
    await mkdir(ws, { recursive: true });
    await writeFile(join(ws, 'log.txt'), 'END');
    const desk = new ApprovalDesk(harness.redis, harness.keys, harness.queue);
    const card = async (): Promise<ApprovalCard> =>
      waitFor('the approval card', async () => {
        const e = (await harness.events('a')).find((x) => x.type === 'approval');
        return e?.type === 'approval' ? e.card : undefined;
      });
    const posts = async () => (await harness.events('a')).filter((e) => e.type === 'post' && e.kind !== 'status').map((e) => (e.type === 'post' ? e.text : ''));
    return { h: harness, desk, card, posts, log: () => readFile(join(ws, 'log.txt'), 'utf8') };
  }

  it("approve: the card shows the exact call; a stranger's click changes nothing; the requester's runs the tool once, on a worker that takes the woken job", async () => {
    const { h, desk, card, posts, log } = await setup('approve');
    const [first] = await h.addWorkers(1);
    const m = await h.send('a', 'append a line');
    const c = await card();
    expect(c).toMatchObject({ tool: 'edit_file', args: APPEND.arguments, requester: 'tester' });
    // The card goes out just before the job is parked: no worker slot is held once it is.
    await waitFor('the job parked', async () => (await h.queue.getJobCounts('delayed')).delayed === 1);
    expect(await h.queue.getJobCounts('active')).toEqual({ active: 0 });
    expect(await log()).toBe('END');

    expect((await desk.decide(c.id, 'approved', { platform: 'terminal', userId: 'mallory', chat: 'a' })).kind).toBe('not_allowed');
    // The worker that parked the run is gone; another one resumes it.
    first!.kill('SIGKILL');
    await first!.exited;
    await h.addWorkers(1);
    expect((await desk.decide(c.id, 'approved', { platform: 'terminal', userId: 'tester', name: 'tester', chat: 'a' })).kind).toBe('decided');
    expect((await desk.decide(c.id, 'denied', { platform: 'terminal', userId: 'tester', chat: 'a' })).kind).toBe('already');
    await h.waitEnded(['a'], [m.id], 30_000);

    expect(await log()).toBe('line-1\nEND');
    expect(await posts()).toEqual([expect.stringMatching(/^result: Edited log.txt/)]);
    const decided = (await h.events('a')).filter((e) => e.type === 'approval_decided');
    expect(decided).toMatchObject([{ outcome: { decision: 'approved', by: 'tester' } }]);
    // The model was asked twice in all: once for the call, once after its result (never again for the call).
    expect(h.fake.requests).toHaveLength(2);
    const [job] = await waitFor('the completed job', async () => {
      const jobs = await h.queue.getJobs(['completed']);
      return jobs.length > 0 && jobs;
    });
    const { logs } = await h.queue.getJobLogs(job!.id!);
    expect(logs.some((l) => /approval .*: approved by tester/.test(l))).toBe(true);
  }, 60_000);

  it('a worker killed right after the click: the call runs at most once and the turn is answered once', async () => {
    const { h, desk, card, posts, log } = await setup('kill-after-click');
    const [first] = await h.addWorkers(1);
    const m = await h.send('a', 'append a line');
    const c = await card();
    await desk.decide(c.id, 'approved', { platform: 'terminal', userId: 'tester', name: 'tester', chat: 'a' });
    // The woken job is taken at once by the only worker; kill it while it resumes.
    await waitFor('the job active again', async () => (await h.queue.getJobCounts('active')).active === 1, 10_000, 5);
    first!.kill('SIGKILL');
    await first!.exited;
    await h.addWorkers(1);
    await h.waitEnded(['a'], [m.id], 30_000);

    expect(['END', 'line-1\nEND']).toContain(await log());
    const answers = await posts();
    expect(answers).toHaveLength(1);
    // Either the edit ran (once) and the model read its result, or it was cut off and the model was told so.
    expect(answers[0]).toMatch(/^result: (Edited log.txt|Error: interrupted)/);
  }, 60_000);

  it('TOOLS_EXEC=approve: run_command waits for approval, then runs once in the sandbox; a denied tool is not offered at all', async () => {
    const { h, desk, card, posts } = await setup('exec', { TOOLS_EXEC: 'approve', TOOLS_DENY: 'terminal:write_file,slack:read_file' });
    const command = 'echo "ran $(cat /proc/self/status | grep -c NSpid) $HOME" >> ran.txt; cat ran.txt';
    h.fake.setHandler((req) => {
      const tool = (req.body.messages as ChatMessage[]).find((m) => m.role === 'tool');
      return tool
        ? { content: `result: ${String(tool.content)}` }
        : { content: 'Running it.', toolCalls: [{ name: 'run_command', arguments: JSON.stringify({ command }) }] };
    });
    await h.addWorkers(1);
    const m = await h.send('a', 'run the command');
    const c = await card();
    expect(c).toMatchObject({ tool: 'run_command', args: JSON.stringify({ command }) });
    await desk.decide(c.id, 'approved', { platform: 'terminal', userId: 'tester', name: 'tester', chat: 'a' });
    await h.waitEnded(['a'], [m.id], 30_000);

    expect(await posts()).toEqual(['result: ran 1 /workspace\n[exit code 0]']);
    const offered = (h.fake.requests[0]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(offered).toContain('run_command');
    expect(offered).toContain('read_file');
    expect(offered).not.toContain('write_file');
  }, 60_000);

  it('deny: the tool does not run; the model reads who denied it and answers', async () => {
    const { h, desk, card, posts, log } = await setup('deny');
    await h.addWorkers(1);
    const m = await h.send('a', 'append a line');
    await desk.decide((await card()).id, 'denied', { platform: 'terminal', userId: 'tester', name: 'tester', chat: 'a' });
    await h.waitEnded(['a'], [m.id], 30_000);
    expect(await log()).toBe('END');
    expect(await posts()).toEqual(['result: Error: not run: edit_file was denied by tester. Do not retry it; answer without it or ask the user.']);
  }, 60_000);

  it('nobody decides before APPROVAL_TIMEOUT_MS: expired, counted as a deny', async () => {
    const { h, posts, log } = await setup('expiry', { APPROVAL_TIMEOUT_MS: '1500' });
    await h.addWorkers(1);
    const m = await h.send('a', 'append a line');
    await h.waitEnded(['a'], [m.id], 30_000);
    expect(await log()).toBe('END');
    expect(await posts()).toEqual([expect.stringMatching(/^result: Error: not run: edit_file was not approved in time \(the approval expired\)/)]);
  }, 60_000);

  it('a parked run holds no worker slot: at concurrency 1 another session is answered while it waits; /stop then ends it cancelled', async () => {
    const { h, card, posts, log } = await setup('slot', { WORKER_CONCURRENCY: '1' });
    await h.addWorkers(1);
    const m = await h.send('a', 'append a line');
    await card();
    const other = await h.send('b', 'hello');
    await h.waitEnded(['b'], [other.id], 20_000);

    const control = new SessionControl(h.redis, h.keys, new ApprovalDesk(h.redis, h.keys, h.queue));
    const session = sessionKeyOf({ platform: 'terminal', conversation: 'a' });
    expect((await control.status(session)).waitingFor).toMatchObject({ tool: 'edit_file' });
    expect(await control.stop(session)).toBe(true);
    const [outcome] = [...(await h.waitEnded(['a'], [m.id], 20_000)).entries()];
    expect(outcome![1]).toBe(1);
    expect(await log()).toBe('END');
    expect(await posts()).toEqual(['Stopped.']);
  }, 60_000);
});
