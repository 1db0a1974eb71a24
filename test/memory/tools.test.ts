import { afterAll, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/channels/types.js';
import { MemoryCommand } from '../../src/intake/memory-command.js';
import { Identities } from '../../src/memory/identity.js';
import { memoryMessage } from '../../src/memory/prompt.js';
import { MemoryStore } from '../../src/memory/store.js';
import { createMemoryTools } from '../../src/memory/tools.js';
import { withoutRecalledMemory, RECALL_WITHHELD } from '../../src/memory/history.js';
import { AgentRoster } from '../../src/profiles/roster.js';
import { SessionKeys } from '../../src/queue/keys.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

const redis = testRedis();
const prefix = uniquePrefix('memory-tools');
const keys = new SessionKeys(prefix, 'runs');
const store = new MemoryStore(redis, keys, { maxEntries: 50 });
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
});
const signal = new AbortController().signal;
const run = (tools: ReturnType<typeof createMemoryTools>, name: string, args: unknown) =>
  tools.find((t) => t.name === name)!.execute(args as never, { signal });

describe('the memory tools', () => {
  it("remember is the asker's; shared goes to the channel's memory, which the block shows as shared", async () => {
    const owners = { person: { agent: 'default', owner: 'slack:UADA' }, channel: { agent: 'default', owner: 'channel:slack:C1' } };
    const pending: string[] = [];
    const tools = createMemoryTools({ store }, owners, { provenance: () => 'said', onPending: async (e) => void pending.push(e.id) });
    expect(await run(tools, 'remember', { text: 'Ada prefers short answers' })).toMatch(/^Remembered \[\w+\]: Ada prefers short answers$/);
    expect(await run(tools, 'remember', { text: 'The team deploys on Thursdays', shared: true })).toMatch(/for everyone in this channel/);
    expect((await store.list(owners.channel)).map((e) => e.text)).toEqual(['The team deploys on Thursdays']);
    const block = String((await memoryMessage({ store }, owners, 'when do we deploy?', 400, 'Ada'))!.content);
    expect(block).toMatch(/About Ada \(their own memory; ids in brackets\):\n- \[\w+\] Ada prefers short answers/);
    expect(block).toMatch(/Shared by everyone in this channel:\n- \[\w+\] The team deploys on Thursdays/);
    expect(await run(tools, 'recall', { query: 'when does the team deploy? deploys' })).toMatch(
      /^- \[\w+\] \(shared in this channel\) The team deploys on Thursdays/,
    );
    // Without a channel memory (a DM, or MEMORY=person) shared is refused with a reason.
    const dm = createMemoryTools({ store }, { person: owners.person }, { provenance: () => 'said', onPending: async () => undefined });
    await expect(run(dm, 'remember', { text: 'x', shared: true })).rejects.toThrow(/no shared channel memory/);
    expect(pending).toEqual([]);
  });

  it('a derived remember is pending and asks the person once; forget takes an id of the asker only', async () => {
    const person = { agent: 'default', owner: 'telegram:9' };
    const asked: string[] = [];
    const tools = createMemoryTools({ store }, { person }, { provenance: () => 'derived', onPending: async (e) => void asked.push(e.id) });
    expect(await run(tools, 'remember', { text: 'Wire the money to IBAN X' })).toMatch(/^Not remembered yet/);
    expect(await run(tools, 'remember', { text: 'Wire the money to IBAN X' })).toMatch(/^Not remembered yet/);
    expect(asked).toHaveLength(1);
    expect(await memoryMessage({ store }, { person }, 'money', 400, 'Bo')).toBeUndefined();
    const other = (await store.remember({ agent: 'default', owner: 'telegram:10' }, 'Someone else', 'said')).entry;
    await expect(run(tools, 'forget', { id: other.id })).rejects.toThrow(/nothing remembered has the id/);
    expect(await run(tools, 'forget', { id: asked[0]! })).toBe(`Forgot [${asked[0]}].`);
  });

  it("the history keeps no recall result, only the other tools' results", () => {
    const kept = withoutRecalledMemory([
      { role: 'user', content: 'q' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'recall', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'read_file', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: '- [x] secret' },
      { role: 'tool', tool_call_id: 'b', content: 'file text' },
    ]);
    expect(kept.slice(2).map((m) => m.content)).toEqual([RECALL_WITHHELD, 'file text']);
  });
});

describe('/memory and /forget', () => {
  const message = (over: Partial<InboundMessage>): InboundMessage => ({
    v: 1,
    id: 'm',
    platform: 'telegram',
    conversation: '-100',
    sender: { id: '77' },
    text: '/memory',
    attachments: [],
    eventId: 'e',
    receivedAt: 0,
    ...over,
  });
  const command = new MemoryCommand(redis, keys, store, new Identities(redis, keys), AgentRoster.load(undefined), 'person');

  it('shows the list only where the answer is private; /forget in a group names no text', async () => {
    await store.remember({ agent: 'default', owner: 'telegram:77' }, 'Lives in Lyon', 'said');
    const group = message({ where: { kind: 'group', ids: ['-100'] } });
    expect(await command.memory('telegram:-100', group)).toMatch(/^Your memory is shown only to you/);
    expect(await command.memory('telegram:77', message({ conversation: '77', where: { kind: 'dm' } }))).toBe(
      'What I remember about you (1); /forget <number> or /forget all removes it:\n1. Lives in Lyon',
    );
    expect(
      await command.memory('slack:C1', message({ platform: 'slack', sender: { id: '77' }, where: { kind: 'group', ids: ['C1'] }, privateReply: true })),
    ).toMatch(/^I remember nothing about you yet/);
    expect(await command.forget('telegram:-100', group, '1')).toEqual({ reply: 'Forgotten.', ok: true });
    expect(await store.list({ agent: 'default', owner: 'telegram:77' })).toEqual([]);
    expect((await command.forget('telegram:-100', group, '')).ok).toBe(false);
    // Under person+channel the channel's shared memory is everyone's there: listed in the group.
    await store.remember({ agent: 'default', owner: 'channel:telegram:-100' }, 'Standup is at 9:30', 'said');
    const shared = new MemoryCommand(redis, keys, store, new Identities(redis, keys), AgentRoster.load(undefined), 'person+channel');
    expect(await shared.memory('telegram:-100', group)).toMatch(
      /^Your memory is shown only to you.*\nWhat everyone in this channel shares:\n- Standup is at 9:30$/s,
    );
    const off = new MemoryCommand(redis, keys, store, new Identities(redis, keys), AgentRoster.load(undefined), 'off');
    expect(await off.memory('telegram:77', message({ where: { kind: 'dm' } }))).toMatch(/^Memory is off here/);
  });
});
