import { describe, expect, it } from 'vitest';
import { toolPolicyOf, type AgentProfile } from '../../src/profiles/roster.js';
import { systemMessage } from '../../src/run/agent-runtime.js';

const profile = (over: Partial<AgentProfile>): AgentProfile => ({
  name: 'a',
  tools: { deny: [], approve: [] },
  skillFolders: [],
  workspace: 'session',
  limits: {},
  ...over,
});
const skill = { name: 'refund', description: 'Handle a refund.', dir: '/skills/refund' };

describe("an agent's tool policy", () => {
  it('adds its deny and approve lists to the global ones; allow offers only what it names', () => {
    const policy = toolPolicyOf(profile({ tools: { allow: ['read_file', 'run_command'], deny: ['telegram:run_command'], approve: ['run_command'] } }), {
      deny: ['write_file'],
      approve: ['edit_file'],
    });
    expect(['read_file', 'write_file', 'list_files', 'run_command'].filter((t) => policy.offered('slack', t))).toEqual(['read_file', 'run_command']);
    expect(policy.offered('telegram', 'run_command')).toBe(false);
    expect([policy.needsApproval('slack', 'run_command'), policy.needsApproval('slack', 'edit_file'), policy.needsApproval('slack', 'read_file')]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('an agent with skills may load them although its allow list does not name load_skill; a deny still wins', () => {
    expect(toolPolicyOf(profile({ tools: { allow: ['read_file'], deny: [], approve: [] } }), { deny: [], approve: [] }).offered('slack', 'load_skill')).toBe(
      false,
    );
    const withSkills = profile({ tools: { allow: ['read_file'], deny: [], approve: [] }, skillFolders: ['/skills'] });
    expect(toolPolicyOf(withSkills, { deny: [], approve: [] }).offered('slack', 'load_skill')).toBe(true);
    expect(toolPolicyOf(withSkills, { deny: ['slack:load_skill'], approve: [] }).offered('slack', 'load_skill')).toBe(false);
  });

  it('the skills listing is in the system message only where load_skill is offered', () => {
    const prompt = { prompt: 'You are the desk.', skills: [skill] };
    expect(systemMessage(prompt, true)).toMatch(/^You are the desk\.\n\nSkills .*\n- refund: Handle a refund\.$/s);
    expect(systemMessage(prompt, false)).toBe('You are the desk.');
    expect(systemMessage({ prompt: 'You are the desk.', skills: [] }, true)).toBe('You are the desk.');
  });
});
