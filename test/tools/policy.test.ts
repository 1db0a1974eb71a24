import { describe, expect, it } from 'vitest';
import { mayDecide, ToolPolicy } from '../../src/tools/policy.js';

describe('ToolPolicy', () => {
  const policy = new ToolPolicy({ deny: ['write_file', 'telegram:run_command'], approve: ['slack:edit_file', 'run_command'] });

  it('denies a tool everywhere, or only on the platform an entry names', () => {
    expect(policy.offered('slack', 'write_file')).toBe(false);
    expect(policy.offered('terminal', 'write_file')).toBe(false);
    expect(policy.offered('telegram', 'run_command')).toBe(false);
    expect(policy.offered('slack', 'run_command')).toBe(true);
    expect(policy.offered('telegram', 'read_file')).toBe(true);
  });

  it('asks for approval everywhere, or only on the platform an entry names', () => {
    expect(policy.needsApproval('discord', 'run_command')).toBe(true);
    expect(policy.needsApproval('slack', 'edit_file')).toBe(true);
    expect(policy.needsApproval('discord', 'edit_file')).toBe(false);
    expect(policy.needsApproval('slack', 'read_file')).toBe(false);
  });

  it('with no lists offers everything and asks for nothing', () => {
    const open = new ToolPolicy();
    expect(open.offered('slack', 'run_command')).toBe(true);
    expect(open.needsApproval('slack', 'run_command')).toBe(false);
  });
});

describe('mayDecide', () => {
  it('APPROVAL_BY=either: the requester decides, and the named approvers of that platform, nobody else', () => {
    const approvers = { by: 'either' as const, approvers: ['slack:U0BOSS', 'telegram:42'] };
    expect(mayDecide(approvers, 'slack', 'U0ASKER', 'U0ASKER')).toBe(true);
    expect(mayDecide(approvers, 'slack', 'U0BOSS', 'U0ASKER')).toBe(true);
    expect(mayDecide(approvers, 'slack', 'U0OTHER', 'U0ASKER')).toBe(false);
    expect(mayDecide(approvers, 'discord', 'U0BOSS', 'U0ASKER')).toBe(false);
    expect(mayDecide(approvers, 'telegram', '42', '7')).toBe(true);
  });

  it('APPROVAL_BY=approvers: the requester does not approve their own call; requester: only the requester', () => {
    const onlyApprovers = { by: 'approvers' as const, approvers: ['slack:U0BOSS'] };
    expect(mayDecide(onlyApprovers, 'slack', 'U0ASKER', 'U0ASKER')).toBe(false);
    expect(mayDecide(onlyApprovers, 'slack', 'U0BOSS', 'U0ASKER')).toBe(true);
    expect(mayDecide(onlyApprovers, 'slack', 'U0BOSS', 'U0BOSS')).toBe(true);
    const onlyRequester = { by: 'requester' as const, approvers: ['slack:U0BOSS'] };
    expect(mayDecide(onlyRequester, 'slack', 'U0ASKER', 'U0ASKER')).toBe(true);
    expect(mayDecide(onlyRequester, 'slack', 'U0BOSS', 'U0ASKER')).toBe(false);
  });
});
