import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Step, RecordedRequest } from '../fakes/openai-server.js';
import { eventsOf, lastMessage, startHarness, toolMessages, type Harness } from './harness.js';

const MEETING = '# Weekly sync\n\nTodo:\n- Send the budget to Ana\n- Book the room for Friday\n- Review the Q3 roadmap\n';
const ANSWER = '1. Send the budget to Ana\n2. Book the room for Friday\n3. Review the Q3 roadmap';

let h: Harness;
beforeEach(async () => {
  h = await startHarness({ 'notes/meeting.md': MEETING });
});
afterEach(async () => {
  await h.close();
});

describe.each([{ stream: false }, { stream: true }])('read and answer (stream: $stream)', ({ stream }) => {
  it('narrates, reads the file once, then answers in exactly two model calls', async () => {
    h.fake.script([
      { content: 'Let me look at the notes.', toolCalls: [{ id: 'call_meeting_1', name: 'read_file', arguments: '{"path":"notes/meeting.md"}' }] },
      { content: ANSWER },
    ]);
    const { outcome, events } = await h.run('Read notes/meeting.md and list the three things I need to do', { stream });

    expect(outcome.state).toBe('completed');
    expect(outcome.reason).toBeUndefined();
    expect(outcome.answer).toBe(ANSWER);
    expect(outcome.steps).toBe(2);
    expect(outcome.modelCalls).toBe(2);
    expect(outcome.toolCalls).toBe(1);
    expect(h.fake.requests).toHaveLength(2);
    expect(h.fake.requests.every((r) => r.body.stream === (stream ? true : undefined))).toBe(true);
    h.fake.assertDone();

    const tool = toolMessages(h.fake.requests[1]);
    expect(tool).toHaveLength(1);
    expect(tool[0].tool_call_id).toBe('call_meeting_1');
    expect(tool[0].content).toContain('- Book the room for Friday');
    expect(tool[0].content).toContain('# Weekly sync');

    expect(outcome.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const call = outcome.transcript[1];
    expect(call?.role === 'assistant' && call.tool_calls?.[0]?.id).toBe('call_meeting_1');
    expect(call?.content).toBe('Let me look at the notes.');

    const types = events.map((e) => e.type).filter((t) => t !== 'answer_text');
    expect(types).toEqual(['model_call', 'narration', 'tool_start', 'tool_end', 'model_call', 'final', 'end']);
    // A streamed call shows its text as it grows, each event the whole text so far of its step; a plain call shows none.
    const streamed = eventsOf(events, 'answer_text');
    if (!stream) expect(streamed).toEqual([]);
    else {
      expect(streamed.filter((e) => e.step === 1).at(-1)?.text).toBe('Let me look at the notes.');
      const second = streamed.filter((e) => e.step === 2).map((e) => e.text);
      expect(second.at(-1)).toBe(ANSWER);
      for (let i = 1; i < second.length; i++) expect(ANSWER.startsWith(second[i - 1]!) && second[i]!.length > second[i - 1]!.length).toBe(true);
      // Each comes before its step's response is resolved: step 1's before its narration.
      expect(events.findIndex((e) => e.type === 'answer_text')).toBeLessThan(events.findIndex((e) => e.type === 'narration'));
    }
    expect(eventsOf(events, 'narration')[0]?.text).toBe('Let me look at the notes.');
    expect(eventsOf(events, 'tool_end')[0]).toMatchObject({ callId: 'call_meeting_1', name: 'read_file', ok: true });
    expect(eventsOf(events, 'final')[0]?.text).toBe(ANSWER);
    expect(eventsOf(events, 'end')[0]?.outcome).toBe(outcome);
    // Usage is summed over both calls (the fake reports chars/4 estimates, never zero here).
    expect(outcome.usage.promptTokens).toBeGreaterThan(0);
    expect(outcome.usage.totalTokens).toBe(outcome.usage.promptTokens + outcome.usage.completionTokens);
  });
});

/** A tiny "model": reads the manifest, follows what it says, answers from what it read. */
function manifestModel(req: RecordedRequest): Step {
  const last = lastMessage(req);
  if (last.role === 'user') {
    return { content: 'Let me read the manifest.', toolCalls: [{ name: 'read_file', arguments: '{"path":"manifest.txt"}' }] };
  }
  if (last.role === 'tool') {
    const text = String(last.content);
    const next = /^see (\S+)/m.exec(text);
    if (next && !text.startsWith('target:')) {
      return { content: `The manifest points to ${next[1]}.`, toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: next[1] }) }] };
    }
    const direct = /^answer directly: (.+)$/m.exec(text);
    return { content: `The answer is: ${direct ? direct[1] : text.trim()}` };
  }
  return { status: 400, body: { error: { message: 'manifestModel: unexpected conversation', type: 'invalid_request_error', param: null, code: null } } };
}

describe('two-hop reads decided from tool results', () => {
  it('follows the manifest to target.txt: three model calls, two reads', async () => {
    await h.close();
    h = await startHarness({ 'manifest.txt': 'see target.txt\n', 'target.txt': 'target: the launch code is 4242\n' });
    h.fake.setHandler(manifestModel);
    const { outcome, events } = await h.run('What does the manifest lead to?');

    expect(outcome.state).toBe('completed');
    expect(outcome.answer).toBe('The answer is: target: the launch code is 4242');
    expect(h.fake.requests).toHaveLength(3);
    expect(outcome.toolCalls).toBe(2);
    expect(eventsOf(events, 'tool_start').map((e) => JSON.parse(e.args).path)).toEqual(['manifest.txt', 'target.txt']);
    expect(toolMessages(h.fake.requests[2]).map((m) => m.content)).toEqual(['see target.txt', 'target: the launch code is 4242']);
    expect(outcome.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
  });

  it('stops after one read when the manifest says to answer directly: two calls', async () => {
    await h.close();
    h = await startHarness({ 'manifest.txt': 'answer directly: forty-two\n', 'target.txt': 'never read\n' });
    h.fake.setHandler(manifestModel);
    const { outcome } = await h.run('What does the manifest lead to?');

    expect(outcome.state).toBe('completed');
    expect(outcome.answer).toBe('The answer is: forty-two');
    expect(h.fake.requests).toHaveLength(2);
    expect(outcome.toolCalls).toBe(1);
  });
});

describe('history and system prompt', () => {
  it('sends system + history + input, and the transcript holds neither system nor history', async () => {
    h.fake.script([{ content: 'Hello again.' }]);
    const history = [
      { role: 'user' as const, content: 'hi' },
      { role: 'assistant' as const, content: 'Hello!' },
    ];
    const { outcome } = await h.run('hi again', { history });
    const sent = h.fake.requests[0]?.body.messages as any[];
    expect(sent.map((m) => `${m.role}:${m.content}`)).toEqual(['system:You are a test assistant.', 'user:hi', 'assistant:Hello!', 'user:hi again']);
    expect(h.fake.requests[0]?.body.tools.map((t: any) => t.function.name)).toContain('read_file');
    expect(outcome.transcript).toEqual([
      { role: 'user', content: 'hi again' },
      { role: 'assistant', content: 'Hello again.' },
    ]);
  });
});
