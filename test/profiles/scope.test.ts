import { describe, expect, it } from 'vitest';
import { workspaceScope } from '../../src/profiles/scope.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';

const asker = (over: object) => ({ platform: 'discord', conversation: 'T1', sender: { id: 'U1' }, ...over });

describe('workspace scopes', () => {
  it('session keeps the session folder; channel, user and shared name the agent (or the shared folder)', () => {
    const m = asker({ platform: 'slack', conversation: 'C1', where: { kind: 'group', ids: ['C1'] } });
    expect(workspaceScope({ name: 'a', workspace: 'session' }, 'slack:C1:171.1', m)).toBe('slack:C1:171.1');
    expect(workspaceScope({ name: 'a', workspace: 'channel' }, 'slack:C1:171.1', m)).toBe('channel:a:slack:C1');
    expect(workspaceScope({ name: 'a', workspace: 'user' }, 'slack:C1:171.1', m)).toBe('user:a:slack:U1');
    expect(workspaceScope({ name: 'a', workspace: 'shared:team' }, 'slack:C1:171.1', m)).toBe('shared:team');
    expect(workspaceScope({ name: 'b', workspace: 'shared:team' }, 'telegram:5', m)).toBe('shared:team');
  });

  it("a Discord thread shares its parent channel's folder, not one of its own", () => {
    const inThread = asker({ where: { kind: 'group', ids: ['T1', 'P1', 'G1'] }, meta: { guildId: 'G1' } });
    const inParent = asker({ conversation: 'P1', where: { kind: 'group', ids: ['P1', 'G1'] }, meta: { guildId: 'G1' } });
    const crew = { name: 'crew', workspace: 'channel' as const };
    expect(workspaceScope(crew, 'discord:T1', inThread)).toBe(workspaceScope(crew, 'discord:P1', inParent));
  });

  it('no scope key collides with a session key, and each is one safe folder name', () => {
    const keys = ['channel:a:slack:C1', 'user:a:slack:U1', 'shared:team', 'slack:C1'];
    const folders = keys.map(workspaceFolderName);
    expect(new Set(folders).size).toBe(keys.length);
    for (const f of folders) expect(f).toMatch(/^[A-Za-z0-9._%-]+$/);
  });
});
