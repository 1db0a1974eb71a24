import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline.js';
import { spawnNode } from '../helpers/processes.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import type { ChatMessage } from '../../src/agent/types.js';

const MEETING = '# Meeting\n\nAction items:\n- Send the budget to Ana\n- Book the room for Friday\n- Review the launch checklist\n';
const ANSWER = '1. Send the budget to Ana\n2. Book the room for Friday\n3. Review the launch checklist';

/** `npm run chat -- [args]` as a process: one-shot mode against the harness's Redis and fake model. */
async function chat(h: PipelineHarness, args: string[], env: Record<string, string> = {}) {
  const p = spawnNode('src/cli/chat.ts', args, { ...h.env, LOG_LEVEL: 'warn', ...env });
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

async function seedWorkspace(h: PipelineHarness, session: string, files: Record<string, string>) {
  const dir = join(h.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'terminal', conversation: session })));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), text);
  }
}

describe('terminal channel: npm run chat through gateway → queue → worker → delivery', () => {
  let h: PipelineHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it.each([
    ['--yes approves: the edit runs', ['--yes'], 'approved (--yes)', 'line\nEND'],
    ['without --yes the call is denied', [], 'denied (run with --yes to approve)', 'END'],
  ])(
    'a call that needs approval in one-shot mode: %s',
    async (_name, flags, said, file) => {
      h = await PipelineHarness.start('chat-approve', { env: { TOOLS_APPROVE: 'edit_file' } });
      await h.addWorkers(1);
      await seedWorkspace(h, 'ap', { 'log.txt': 'END' });
      h.fake.setHandler((req) => {
        const tool = (req.body.messages as ChatMessage[]).find((m) => m.role === 'tool');
        return tool
          ? { content: `result: ${String(tool.content).split('\n')[0]}` }
          : {
              content: 'Appending.',
              toolCalls: [{ name: 'edit_file', arguments: JSON.stringify({ path: 'log.txt', old_text: 'END', new_text: 'line\nEND' }) }],
            };
      });
      const run = await chat(h, ['--no-worker', ...flags, '--session', 'ap', 'append a line']);

      expect(run.code).toBe(0);
      expect(run.stderr).toContain('Call edit_file with these arguments?');
      expect(run.stderr).toContain(said);
      const dir = join(h.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'terminal', conversation: 'ap' })));
      expect(await readFile(join(dir, 'log.txt'), 'utf8')).toBe(file);
      expect(run.stdout).toMatch(flags.length ? /^result: Edited log.txt/ : /^result: Error: not run: edit_file was denied by /);
    },
    60_000,
  );

  it('reads a file with one tool call, narrates before answering, and exits 0 (separately running worker)', async () => {
    h = await PipelineHarness.start('chat-read');
    await h.addWorkers(1);
    await seedWorkspace(h, 'meeting', { 'notes/meeting.md': MEETING });
    h.fake.script([
      { content: 'Let me look at the notes.', toolCalls: [{ id: 'call_read_1', name: 'read_file', arguments: '{"path":"notes/meeting.md"}' }] },
      { content: ANSWER },
    ]);
    const run = await chat(h, ['--no-worker', '--session', 'meeting', 'Read notes/meeting.md and list the three things I need to do']);

    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${ANSWER}\n`);
    expect(run.stderr).toContain('Let me look at the notes.');
    h.fake.assertDone();
    expect(h.fake.requests).toHaveLength(2);
    const second = h.fake.requests[1]!.body.messages as ChatMessage[];
    const tool = second.find((m) => m.role === 'tool');
    expect(tool).toMatchObject({ role: 'tool', tool_call_id: 'call_read_1' });
    expect(String(tool!.content)).toContain('Review the launch checklist');
    // Narration reached the channel before the answer.
    const kinds = (await h.events('meeting')).map((e) => (e.type === 'post' ? `post:${e.kind}` : e.type));
    expect(kinds.indexOf('progress')).toBeGreaterThanOrEqual(0);
    expect(kinds.indexOf('progress')).toBeLessThan(kinds.indexOf('post:answer'));
    // The stored turn: user → assistant(tool call) → tool → assistant.
    const [turn] = (await h.redis.lrange(h.keys.history(sessionKeyOf({ platform: 'terminal', conversation: 'meeting' })), 0, -1)).map(
      (t) => JSON.parse(t) as ChatMessage[],
    );
    expect(turn!.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const [job] = await h.queue.getJobs(['completed']);
    expect(job!.returnvalue).toMatchObject({ state: 'completed', steps: 2, modelCalls: 2, toolCalls: 1 });
    expect(await job!.getState()).toBe('completed');
    // The dashboard's view of the run: the message in the job data, the narration and tool calls in its logs.
    expect(job!.data.messages?.map((m) => m.text)).toEqual(['Read notes/meeting.md and list the three things I need to do']);
    const { logs } = await h.queue.getJobLogs(job!.id!);
    expect(logs).toEqual(
      expect.arrayContaining([
        'assistant: Let me look at the notes.',
        expect.stringMatching(/^tool read_file ok in \d+ ms: read_file notes\/meeting.md → /),
        expect.stringMatching(/^run completed: 2 steps, 1 tool calls/),
      ]),
    );
  }, 60_000);

  it('starts a worker in the chat process when none runs, and --session continues a conversation', async () => {
    h = await PipelineHarness.start('chat-embedded');
    const first = await chat(h, ['--session', 'cont', 'cont my name is Ada']);
    expect(first.code).toBe(0);
    expect(first.stderr).toContain('starting one in this process');
    expect(first.stdout).toBe('ack cont my name is Ada\n');
    const second = await chat(h, ['--session', 'cont', 'cont what is my name?']);
    expect(second.code).toBe(0);
    const contents = (h.fake.requests[1]!.body.messages as ChatMessage[]).map((m) => `${m.role}: ${String(m.content)}`);
    expect(contents.slice(1)).toEqual(['user: cont my name is Ada', 'assistant: ack cont my name is Ada', 'user: cont what is my name?']);
  }, 60_000);

  it('send_file prints where the file is (nothing is copied), and a file outside the workspace is an error the model reads', async () => {
    h = await PipelineHarness.start('chat-file');
    await seedWorkspace(h, 'files', { 'out/report.csv': 'a,b\n1,2\n' });
    h.fake.setHandler((req) => {
      const results = (req.body.messages as ChatMessage[]).filter((m) => m.role === 'tool').map((m) => String(m.content));
      if (results.length === 0)
        return { content: 'Sending it.', toolCalls: [{ name: 'send_file', arguments: JSON.stringify({ path: 'out/report.csv', caption: 'the numbers' }) }] };
      if (results.length === 1)
        return { content: 'And the other one.', toolCalls: [{ name: 'send_file', arguments: JSON.stringify({ path: '../../etc/passwd' }) }] };
      return { content: `done: ${results.join(' | ')}` };
    });
    const run = await chat(h, ['--session', 'files', 'send me the report']);
    expect(run.code).toBe(0);
    const dir = join(h.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'terminal', conversation: 'files' })));
    const lines = run.stdout.split('\n');
    expect(lines).toContain(`[file] ${join(dir, 'out/report.csv')} (8 B): the numbers`);
    expect(lines.filter((l) => l.startsWith('[file]'))).toHaveLength(1);
    expect(run.stdout).toContain('done: Sent out/report.csv (8 B) into the conversation | Error: ');
    expect(run.stdout).toContain('outside the workspace');
  }, 60_000);

  it('an incomplete turn ("Let me look" + tool call, then the model keeps failing) fails honestly: exit 1, job failed, nothing completed', async () => {
    h = await PipelineHarness.start('chat-incomplete', { env: { AGENT_MODEL_RETRIES: '1' } });
    await h.addWorkers(1);
    await seedWorkspace(h, 'inc', { 'a.txt': 'alpha' });
    h.fake.script([{ content: 'Let me look.', toolCalls: [{ name: 'read_file', arguments: '{"path":"a.txt"}' }] }, { status: 500 }, { status: 503 }]);
    const run = await chat(h, ['--no-worker', '--session', 'inc', 'inc what does a.txt say?']);

    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('the model stopped before giving an answer');
    const failed = await h.queue.getJobs(['failed']);
    expect(failed.map((j) => j.failedReason)).toEqual([expect.stringMatching(/^failed: incomplete_turn/)]);
    expect(await h.queue.getJobCounts('completed')).toEqual({ completed: 0 });
    const last = JSON.parse((await h.redis.get(h.keys.last(sessionKeyOf({ platform: 'terminal', conversation: 'inc' }))))!);
    expect(last).toMatchObject({ state: 'failed', reason: 'incomplete_turn' });
    const kinds = (await h.events('inc')).flatMap((e) => (e.type === 'post' ? [e.kind] : e.type === 'ended' ? [e.outcome.state] : []));
    expect(kinds).toEqual(['notice', 'failed']);
  }, 60_000);

  it("AGENTS_CONFIG: /agent names the terminal's agent, and its turn runs with that agent's prompt and model", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-chat-agents-'));
    try {
      const file = join(dir, 'agents.yaml');
      await writeFile(
        file,
        'agents:\n  - name: helper\n    prompt: You are the terminal helper.\n    model: {model: helper-model}\n    tools: {allow: [read_file]}\n  - name: default\nbindings:\n  - {platform: terminal, agent: helper}\n',
      );
      h = await PipelineHarness.start('chat-agents', { env: { AGENTS_CONFIG: file } });
      await h.addWorkers(1);
      const agent = await chat(h, ['--no-worker', '--session', 'ag', '/agent']);
      expect(agent.code).toBe(0);
      expect(agent.stdout.split('\n').slice(0, 3)).toEqual([
        'Agent here: helper (what the bindings give this conversation).',
        'Model: helper-model.',
        'Tools: read_file.',
      ]);
      h.fake.setHandler(() => ({ content: 'hello from the helper' }));
      const turn = await chat(h, ['--no-worker', '--session', 'ag', 'hi']);
      expect(turn.stdout).toContain('hello from the helper');
      const req = h.fake.requests.at(-1)!;
      expect([req.body.model, (req.body.messages as ChatMessage[])[0]!.content]).toEqual(['helper-model', 'You are the terminal helper.']);
      expect(((req.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(['read_file']);
      const after = await chat(h, ['--no-worker', '--session', 'ag', '/agent']);
      expect(after.stdout.split('\n')[0]).toBe("Agent here: helper (this conversation's agent since it started; /reset picks again).");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('/reset starts a fresh conversation; unknown commands get a clear error and enqueue nothing', async () => {
    h = await PipelineHarness.start('chat-reset');
    await h.addWorkers(1);
    expect((await chat(h, ['--no-worker', '--session', 'z', 'z remember this'])).code).toBe(0);
    const reset = await chat(h, ['--no-worker', '--session', 'z', '/reset']);
    expect(reset.code).toBe(0);
    expect(reset.stdout).toContain('Fresh start');
    expect((await chat(h, ['--no-worker', '--session', 'z', 'z after'])).code).toBe(0);
    const roles = (h.fake.requests[1]!.body.messages as ChatMessage[]).map((m) => m.role);
    expect(roles).toEqual(['system', 'user']);

    const unknown = await chat(h, ['--no-worker', '--session', 'z', '/frobnicate now']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Unknown command /frobnicate');
    expect(h.fake.requests).toHaveLength(2);
  }, 60_000);
});
