import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deriveConfig } from '../../src/config/config.js';
import { parseEnv } from '../../src/config/load.js';
import { checkAgents } from '../../src/doctor/checks/agents.js';

const dir = mkdtempSync(join(tmpdir(), 'sb-doctor-agents-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const configWith = (file: string, extra: Record<string, string> = {}) => deriveConfig(parseEnv({ AGENTS_CONFIG: file, ...extra }));

describe('npm run doctor: AGENTS_CONFIG', () => {
  it('a good file: one ✓ line naming the agents and skills', async () => {
    mkdirSync(join(dir, 'skills', 'triage'), { recursive: true });
    writeFileSync(join(dir, 'skills', 'triage', 'SKILL.md'), '---\nname: triage\ndescription: Sort a ticket.\n---\nSteps.\n');
    const file = join(dir, 'good.yaml');
    writeFileSync(file, 'agents:\n  - name: support\n    skills: [skills]\n  - name: default\n');
    expect(await checkAgents(configWith(file), {})).toEqual([
      expect.objectContaining({ status: 'ok', found: '2 agent(s) (support, default), default default, 1 skill(s)' }),
    ]);
  });

  it('a wrong file, a missing key and a malformed skill: one ✗ line each', async () => {
    mkdirSync(join(dir, 'bad-skills', 'Bad'), { recursive: true });
    writeFileSync(join(dir, 'bad-skills', 'Bad', 'SKILL.md'), 'no front matter');
    const tie = join(dir, 'tie.yaml');
    writeFileSync(tie, 'agents: [{name: a}, {name: b}, {name: default}]\nbindings:\n  - {kind: dm, agent: a}\n  - {kind: dm, agent: b}\n');
    const [tied] = await checkAgents(configWith(tie), {});
    expect(tied).toMatchObject({ status: 'fail', name: 'agents' });
    expect(tied!.found).toMatch(/equally specific/);

    const lacking = join(dir, 'lacking.yaml');
    writeFileSync(lacking, 'agents:\n  - name: default\n    model: {model: m, apiKeyEnv: MY_KEY}\n    skills: [bad-skills]\n');
    const results = await checkAgents(configWith(lacking), {});
    expect(results.map((r) => [r.status, r.name])).toEqual([
      ['fail', 'agents'],
      ['fail', 'agent default skills'],
    ]);
    expect(results[0]!.found).toBe('agent "default": model.apiKeyEnv: MY_KEY is not set');
    expect(results[1]!.found).toMatch(/bad-skills\/Bad/);
  });
});
