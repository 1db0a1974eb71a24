import { readdir, readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventsOf, startHarness, toolMessages, type Harness } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await startHarness({ 'a.txt': 'alpha\n' });
  await symlink(h.outsideDir, path.join(h.wsDir, 'link'));
});
afterEach(async () => {
  await h.close();
});

/** Each bad call must come back to the model as an error tool result, and the run go on. */
const cases: { name: string; call: () => { name: string; arguments: string }; expect: RegExp }[] = [
  { name: 'unknown tool', call: () => ({ name: 'delete_everything', arguments: '{}' }), expect: /unknown tool "delete_everything".*read_file/s },
  { name: 'malformed JSON', call: () => ({ name: 'read_file', arguments: '{"path": "a.txt"' }), expect: /not valid JSON/ },
  { name: 'schema-invalid arguments', call: () => ({ name: 'read_file', arguments: '{"path": 42}' }), expect: /invalid arguments for read_file[\s\S]*path/ },
  {
    name: 'path with ../',
    call: () => ({ name: 'write_file', arguments: JSON.stringify({ path: '../outside/secret.txt', content: 'pwned' }) }),
    expect: /\.\.\/outside\/secret\.txt is outside the workspace/,
  },
  {
    name: 'absolute path',
    call: () => ({ name: 'write_file', arguments: JSON.stringify({ path: path.join(h.outsideDir, 'secret.txt'), content: 'pwned' }) }),
    expect: /is an absolute path/,
  },
  {
    name: 'symlink out of the workspace (write)',
    call: () => ({ name: 'write_file', arguments: JSON.stringify({ path: 'link/new.txt', content: 'pwned' }) }),
    expect: /outside the workspace/,
  },
  {
    name: 'symlink out of the workspace (read)',
    call: () => ({ name: 'read_file', arguments: '{"path":"link/secret.txt"}' }),
    expect: /outside the workspace/,
  },
];

describe('tool errors cross back to the model as results', () => {
  it.each(cases)('$name', async (c) => {
    const call = c.call();
    h.fake.script([{ content: 'Let me try.', toolCalls: [{ id: 'call_bad', ...call }] }, { content: 'That did not work, sorry.' }]);
    const { outcome, events } = await h.run('do the thing');

    expect(outcome.state).toBe('completed');
    expect(outcome.answer).toBe('That did not work, sorry.');
    expect(h.fake.requests).toHaveLength(2);
    const [tool] = toolMessages(h.fake.requests[1]);
    expect(tool.tool_call_id).toBe('call_bad');
    expect(tool.content).toMatch(/^Error: /);
    expect(tool.content).toMatch(c.expect);
    expect(eventsOf(events, 'tool_end')[0]?.ok).toBe(false);

    // Nothing outside the workspace was touched.
    expect(await readFile(path.join(h.outsideDir, 'secret.txt'), 'utf8')).toBe('outside secret\n');
    expect(await readdir(h.outsideDir)).toEqual(['secret.txt']);
    expect((await readdir(h.root)).sort()).toEqual(['outside', 'ws']);
  });

  it('runs several calls of one message in order, each answered with its own id', async () => {
    h.fake.script([
      {
        content: null,
        toolCalls: [
          { id: 'c1', name: 'write_file', arguments: '{"path":"b.txt","content":"beta"}' },
          { id: 'c2', name: 'read_file', arguments: '{"path":"b.txt"}' },
          { id: 'c3', name: 'nope', arguments: '{}' },
        ],
      },
      { content: 'b.txt says beta.' },
    ]);
    const { outcome, events } = await h.run('write then read');

    expect(outcome.state).toBe('completed');
    expect(eventsOf(events, 'narration')).toHaveLength(0); // no visible text, no narration
    const tools = toolMessages(h.fake.requests[1]);
    expect(tools.map((t) => t.tool_call_id)).toEqual(['c1', 'c2', 'c3']);
    expect(tools[1].content).toBe('beta'); // the read saw the write: calls ran in order
    expect(tools[2].content).toMatch(/^Error: unknown tool/);
    expect(eventsOf(events, 'tool_end').map((e) => e.ok)).toEqual([true, true, false]);
    expect(outcome.toolCalls).toBe(3);
  });

  it('gives a tool call without an id a generated one, used by its result (compat)', async () => {
    h.fake.script([{ content: 'Reading.', toolCalls: [{ id: '', name: 'read_file', arguments: '{"path":"a.txt"}' }] }, { content: 'alpha' }]);
    const { outcome } = await h.run('read a');

    expect(outcome.state).toBe('completed');
    const sentCall = h.fake.requests[1]?.body.messages.find((m: any) => m.role === 'assistant').tool_calls[0];
    expect(sentCall.id).toMatch(/^call_sb_/);
    expect(toolMessages(h.fake.requests[1])[0].tool_call_id).toBe(sentCall.id);
  });
});
