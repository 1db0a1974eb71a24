import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentRoster } from '../../src/profiles/roster.js';
import { ConfigError } from '../../src/lib/config-error.js';

const dir = mkdtempSync(join(tmpdir(), 'sb-agents-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (text: string, ext = 'yaml') => {
  const path = join(dir, `agents-${++n}.${ext}`);
  writeFileSync(path, text);
  return path;
};
const problems = (path: string): string[] => {
  try {
    AgentRoster.load(path);
  } catch (err) {
    if (err instanceof ConfigError) return err.lines;
    throw err;
  }
  return [];
};

const ISSUE_EXAMPLE = `
agents:
  - name: support
    prompt: You are the support desk assistant.
    model: {model: gpt-4.1-mini}
    tools: {deny: [edit_file, send_file]}
    skills: [skills/support]
    mcpServers: [tickets]
    workspace: channel
  - name: eng
    model: {model: qwen2.5-coder, baseUrl: http://gpu-box:8000/v1, apiKeyEnv: ENG_MODEL_KEY}
    tools: {allow: [read_file, write_file, list_files, run_command]}
    workspace: user
    limits: {maxSteps: 30}
  - name: default
bindings:
  - {platform: slack, channel: C0123SUPPORT, agent: support}
  - {platform: slack, channel: C0123SUPPORT, user: U0BOSS, agent: eng}
  - {platform: discord, guild: "1200000000000000001", agent: eng}
  - {platform: telegram, kind: dm, agent: default}
default: default
`;

describe('AGENTS_CONFIG', () => {
  it("loads the issue's example, YAML or JSON", () => {
    const roster = AgentRoster.load(file(ISSUE_EXAMPLE));
    expect(roster.profiles.map((p) => p.name)).toEqual(['support', 'eng', 'default']);
    const support = roster.get('support')!;
    expect(support).toMatchObject({
      prompt: 'You are the support desk assistant.',
      workspace: 'channel',
      mcpServers: ['tickets'],
      tools: { deny: ['edit_file', 'send_file'], approve: [] },
    });
    expect(support.skillFolders).toEqual([join(dir, 'skills/support')]);
    expect(roster.get('eng')).toMatchObject({
      model: { model: 'qwen2.5-coder', apiKeyEnv: 'ENG_MODEL_KEY' },
      limits: { maxSteps: 30 },
      tools: { allow: ['read_file', 'write_file', 'list_files', 'run_command'] },
    });
    const json = AgentRoster.load(file(JSON.stringify({ agents: [{ name: 'solo', workspace: 'shared:team' }], default: 'solo' }), 'json'));
    expect(json.get('solo')?.workspace).toBe('shared:team');
    expect(json.fallback).toBe('solo');
  });

  it('reads a prompt file next to the config', () => {
    mkdirSync(join(dir, 'prompts'), { recursive: true });
    writeFileSync(join(dir, 'prompts', 'support.md'), 'You answer tickets.\n');
    const roster = AgentRoster.load(file('agents:\n  - name: default\n    prompt: {file: prompts/support.md}\n'));
    expect(roster.get('default')?.prompt).toBe('You answer tickets.');
    expect(problems(file('agents:\n  - name: default\n    prompt: {file: prompts/missing.md}\n'))).toEqual([
      expect.stringMatching(/agent "default": prompt\.file: cannot read prompts\/missing\.md \(ENOENT\)$/),
    ]);
  });

  it('says which agent and field is wrong, one line each', () => {
    const lines = problems(
      file(`
agents:
  - name: support
    tools: {allow: [read file]}
    workspace: everywhere
    limits: {maxSteps: 0}
  - name: Bad Name
  - name: support
bindings:
  - {platform: slack, agent: ghost}
  - {agent: default}
  - {platform: telegram, team: T1, agent: support}
`),
    );
    expect(lines.every((l) => l.startsWith('config: AGENTS_CONFIG ('))).toBe(true);
    const text = lines.join('\n');
    expect(text).toMatch(/agent "support": tools\.allow\[0\]: must be a tool name or platform:tool/);
    expect(text).toMatch(/agent "support": workspace: must be session, channel, user or shared:<name>/);
    expect(text).toMatch(/agent "support": limits\.maxSteps: must be from 1 to 500/);
    expect(text).toMatch(/agent "Bad Name": name: must be lowercase letters/);
  });

  it('checks what zod cannot: names, references, empty bindings, the default', () => {
    const text = problems(
      file(`
agents:
  - name: support
  - name: support
bindings:
  - {platform: slack, agent: ghost}
  - {agent: support}
  - {platform: telegram, team: T1, agent: support}
`),
    ).join('\n');
    expect(text).toMatch(/agent "support": name: another agent has this name/);
    expect(text).toMatch(/bindings\[0\]: agent: no agent is named "ghost"/);
    expect(text).toMatch(/bindings\[1\]: matches every message/);
    expect(text).toMatch(/bindings\[2\]: team: is a Slack workspace id/);
    expect(text).toMatch(/default: is required/);
  });

  it('refuses a tie at start', () => {
    const lines = problems(
      file(`
agents: [{name: a}, {name: b}, {name: default}]
bindings:
  - {platform: slack, channel: C1, agent: a}
  - {platform: slack, user: U1, agent: b}
`),
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/equally specific/);
  });

  it('refuses a file that is not YAML, or not there', () => {
    expect(problems(file('agents: [unclosed'))[0]).toMatch(/not valid YAML/);
    expect(problems(file('{"agents": ', 'json'))[0]).toMatch(/not valid JSON/);
    expect(problems(join(dir, 'nope.yaml'))[0]).toMatch(/cannot read it \(ENOENT\)/);
  });

  it('without AGENTS_CONFIG there is one agent, from the environment', () => {
    const roster = AgentRoster.load(undefined);
    expect(roster.configured).toBe(false);
    expect(roster.profiles.map((p) => p.name)).toEqual(['default']);
    expect(roster.decide({ platform: 'slack', conversation: 'C1', sender: { id: 'U1' } })).toBe('default');
  });

  it('names what the environment lacks for the agents', () => {
    const roster = AgentRoster.load(file(ISSUE_EXAMPLE));
    expect(roster.problems({}, undefined)).toEqual([
      'agent "support": mcpServers: "tickets" needs MCP_CONFIG (it is not set)',
      'agent "eng": model.apiKeyEnv: ENG_MODEL_KEY is not set',
    ]);
    expect(roster.problems({ ENG_MODEL_KEY: 'k' }, ['tickets', 'docs'])).toEqual([]);
    expect(roster.problems({ ENG_MODEL_KEY: 'k' }, ['docs'])).toEqual(['agent "support": mcpServers: MCP_CONFIG has no server "tickets" (it has docs)']);
  });
});

describe('the worked example (examples/agents)', () => {
  it('loads, has no ties, and its skills are well formed', async () => {
    const { SkillShelf } = await import('../../src/profiles/skills.js');
    const { createLogger } = await import('../../src/log.js');
    const roster = AgentRoster.load(join(import.meta.dirname, '../../examples/agents/agents.yaml'));
    expect(roster.profiles.map((p) => p.name)).toEqual(['support', 'eng', 'assistant', 'default']);
    const names: string[] = [];
    for (const p of roster.profiles) {
      if (p.skillFolders.length === 0) continue;
      const shelf = await SkillShelf.open(p.skillFolders, { promptTokens: 1_500, log: createLogger('silent'), label: p.name });
      names.push(...(await shelf.current()).map((s) => s.name));
    }
    expect(names).toEqual(['refund', 'release-notes']);
    expect(roster.decide({ platform: 'telegram', conversation: '5', sender: { id: '5' }, where: { kind: 'dm' } })).toBe('assistant');
    expect(roster.decide({ platform: 'slack', conversation: 'C0123SUPPORT', sender: { id: 'U0BOSS' }, where: { kind: 'group', ids: ['C0123SUPPORT'] } })).toBe(
      'eng',
    );
  });
});
