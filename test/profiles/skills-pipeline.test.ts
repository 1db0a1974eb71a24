import { mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkExecRuntime } from '../../src/tools/index.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';
import type { RecordedRequest } from '../fakes/openai-server.js';
import { waitFor } from '../helpers/processes.js';
import { TelegramHarness } from '../channels/telegram/harness.js';

/**
 * An agent's skills through the pipeline (Telegram, the real roles, the fake model): listed in the
 * system message as the folder holds them now, read with load_skill and read_file, run read-only
 * at /skills/<name> in the bwrap sandbox, never written.
 */

// The worker's own check: bwrap installed and able to run a command here.
const hasBwrap = (await checkExecRuntime({ sandbox: 'bwrap', network: false, maxTimeoutS: 60 })).ok;

const PROMPT = 'You help the team with its weekly chores.';
const SKILL_FILES: Record<string, string> = {
  'report/SKILL.md': '---\nname: report\ndescription: Builds the weekly report.\n---\nRun scripts/run.sh and post what it prints.\n',
  'report/scripts/run.sh': 'echo "report from $(pwd)"\ncat "$(dirname "$0")/../templates/header.txt"\n',
  'report/templates/header.txt': '== Weekly report ==\n',
};

type Message = { role: string; content: unknown };
const messagesOf = (req: RecordedRequest): Message[] => req.body.messages as Message[];
const systemOf = (req: RecordedRequest): string => String(messagesOf(req)[0]!.content);
const toolNames = (req: RecordedRequest): string[] => ((req.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
/** The result of the previous step's one tool call, as the model reads it in this request. */
const lastToolResult = (req: RecordedRequest): string => {
  const last = messagesOf(req).at(-1)!;
  expect(last.role).toBe('tool');
  return String(last.content);
};
const call = (name: string, args: unknown) => ({ content: null, toolCalls: [{ name, arguments: JSON.stringify(args) }] });

/** Every path under `dir` with its content ('<dir>' for folders), to compare before and after. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const abs = join(entry.parentPath, entry.name);
    out[abs.slice(dir.length + 1)] = entry.isFile() ? await readFile(abs, 'utf8') : '<dir>';
  }
  return out;
}

describe('skills through the pipeline (Telegram, real roles, fake model)', () => {
  let dir: string;
  let skillsDir: string;
  let h: TelegramHarness;

  beforeAll(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'sb-skills-pipe-')));
    skillsDir = join(dir, 'skills');
    for (const [rel, text] of Object.entries(SKILL_FILES)) {
      await mkdir(dirname(join(skillsDir, rel)), { recursive: true });
      await writeFile(join(skillsDir, rel), text);
    }
    const agents = join(dir, 'agents.yaml');
    await writeFile(agents, ['agents:', '  - name: helper', `    prompt: ${PROMPT}`, '    skills: [skills]', 'default: helper', ''].join('\n'));
    h = await TelegramHarness.start('skills-pipe', { AGENTS_CONFIG: agents, ...(hasBwrap && { TOOLS_EXEC: 'on', EXEC_SANDBOX: 'bwrap' }) });
  });
  afterAll(async () => {
    await h?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Sends a DM and waits for its answer; returns the model requests of that turn. */
  async function turn(chat: number, text: string): Promise<RecordedRequest[]> {
    const before = h.stack.fake.requests.length;
    const answered = h.answers(chat).length;
    h.dm(chat, text);
    await waitFor('the answer', () => h.answers(chat).length === answered + 1, 30_000);
    h.stack.fake.assertDone();
    return h.stack.fake.requests.slice(before);
  }

  it.skipIf(!hasBwrap)(
    '(a) load_skill, then the skill script runs at /skills/<name> in the sandbox, and a write there fails; the host folder is unchanged',
    { timeout: 60_000 },
    async () => {
      const before = await snapshot(skillsDir);
      h.stack.fake.script([
        call('load_skill', { name: 'report' }),
        call('run_command', { command: 'bash /skills/report/scripts/run.sh' }),
        call('run_command', { command: 'touch /skills/report/x' }),
        call('read_file', { path: 'skills/report/templates/header.txt' }),
        { content: 'Here is the report.' },
      ]);
      const requests = await turn(7001, 'make the weekly report');
      expect(requests).toHaveLength(5);
      expect(lastToolResult(requests[1]!)).toBe(
        [
          'Run scripts/run.sh and post what it prints.',
          '',
          '[Files of skill "report": read them with read_file at skills/report/<file>; run them at /skills/report/<file> in run_command (read-only).]',
          '- scripts/run.sh',
          '- templates/header.txt',
        ].join('\n'),
      );
      // The script ran in the sandbox: the workspace is its working folder, its own files beside it.
      expect(lastToolResult(requests[2]!)).toBe('report from /workspace\n== Weekly report ==\n[exit code 0]');
      const touched = lastToolResult(requests[3]!);
      expect(touched).toMatch(/touch: cannot touch '\/skills\/report\/x': Read-only file system/);
      expect(touched).toMatch(/\[exit code 1\]$/);
      expect(lastToolResult(requests[4]!)).toContain('== Weekly report ==');
      expect(h.answers(7001)[0]!.body.text).toBe('Here is the report.');

      expect(await snapshot(skillsDir)).toEqual(before);
      // Nothing of the skill was copied into the conversation's workspace either.
      const workspace = join(h.stack.workspaceRoot, workspaceFolderName('telegram:7001'));
      expect(await readdir(workspace).catch(() => [])).not.toContain('x');
    },
  );

  it('(b) the system message lists the skills as the folder holds them now: a skill added while running is in the next turn', { timeout: 60_000 }, async () => {
    const chat = 7002;
    h.stack.fake.script([{ content: 'Noted.' }]);
    const [first] = await turn(chat, 'what can you do?');
    const listing = (req: RecordedRequest) => systemOf(req).split('\n');
    expect(listing(first!)).toEqual([PROMPT, '', expect.stringMatching(/^Skills \(.*load_skill.*\):$/), '- report: Builds the weekly report.']);
    expect(toolNames(first!)).toContain('load_skill');

    // Installed by the operator while the stack runs: made aside, then moved in whole.
    const staging = join(dir, 'staging', 'invoice');
    await mkdir(staging, { recursive: true });
    await writeFile(join(staging, 'SKILL.md'), '---\nname: invoice\ndescription: Drafts an invoice from hours.\n---\nAsk for the hours, then draft it.\n');
    await rename(staging, join(skillsDir, 'invoice'));

    h.stack.fake.script([call('load_skill', { name: 'invoice' }), { content: 'Ready to draft.' }]);
    const [next, afterLoad] = await turn(chat, 'and now?');
    expect(listing(next!).slice(3)).toEqual(['- invoice: Drafts an invoice from hours.', '- report: Builds the weekly report.']);
    expect(lastToolResult(afterLoad!)).toBe('Ask for the hours, then draft it.');

    // /agent (the gateway's view) sees it too.
    h.dm(chat, '/agent', { entities: [{ type: 'bot_command', offset: 0, length: 6 }] });
    await waitFor('the /agent reply', () => h.answers(chat).length === 3);
    expect(String(h.answers(chat)[2]!.body.text).split('\n')).toContain('Skills: invoice (Drafts an invoice from hours.); report (Builds the weekly report.).');
  });

  it('(c) write_file into a skill folder is an error result the model reads, and nothing is written', { timeout: 60_000 }, async () => {
    const before = await snapshot(skillsDir);
    h.stack.fake.script([
      call('write_file', { path: 'skills/report/x.md', content: 'overwritten' }),
      call('edit_file', { path: 'skills/report/SKILL.md', old_text: 'Run', new_text: 'Skip' }),
      { content: 'I cannot change the skill.' },
    ]);
    const requests = await turn(7003, 'change the report skill');
    expect(requests).toHaveLength(3);
    expect(lastToolResult(requests[1]!)).toBe(
      'Error: skills/report/x.md is inside skills/report, which is read-only; copy what you need elsewhere in the workspace',
    );
    expect(lastToolResult(requests[2]!)).toMatch(/^Error: skills\/report\/SKILL\.md is inside skills\/report, which is read-only/);
    expect(await snapshot(skillsDir)).toEqual(before);
    const workspace = join(h.stack.workspaceRoot, workspaceFolderName('telegram:7003'));
    expect(await snapshot(workspace).catch(() => ({}))).toEqual({});
  });
});
