import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunSuspended } from '../../src/agent/suspend.js';
import type { StepJournal, StepRecord } from '../../src/agent/types.js';
import { eventsOf, startHarness, toolMessages, type Harness } from './harness.js';

/** A journal in memory: what earlier runs recorded, and each flush this run wrote. */
class MemoryJournal implements StepJournal {
  readonly flushes: StepRecord[][] = [];
  private buffer: StepRecord[] = [];
  onFlush: ((batch: StepRecord[]) => Promise<void>) | undefined;
  constructor(readonly recorded: StepRecord[] = []) {}
  record(entry: StepRecord): void {
    this.buffer.push(entry);
  }
  async flush(): Promise<void> {
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    await this.onFlush?.(batch);
    this.flushes.push(batch);
  }
  /** Everything this run wrote and still buffers, as the next run would read it. */
  all(): StepRecord[] {
    return [...this.recorded, ...this.flushes.flat(), ...this.buffer];
  }
}

const APPEND = { id: 'call_w', name: 'edit_file', arguments: JSON.stringify({ path: 'log.txt', old_text: 'END', new_text: 'line-1\nEND' }) };
const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };
const modelAsks = (calls: (typeof APPEND)[], content: string | null = 'Appending.'): StepRecord => ({
  t: 'model',
  step: 1,
  calls: 1,
  response: {
    message: {
      role: 'assistant',
      content,
      tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
    },
    stopReason: 'toolUse',
    usage,
  },
});
const started = (call: typeof APPEND, readOnly = false): StepRecord => ({
  t: 'tool_start',
  step: 1,
  callId: call.id,
  name: call.name,
  args: call.arguments,
  ...(readOnly && { readOnly: true as const }),
});

let h: Harness;
const logFile = () => readFile(path.join(h.wsDir, 'log.txt'), 'utf8');
beforeEach(async () => {
  h = await startHarness({ 'log.txt': 'END', 'notes.md': 'the notes' });
});
afterEach(async () => {
  await h.close();
});

describe('a fresh run writes ahead', () => {
  it('journals the model response with the tool call before the tool runs, in one write; the result before the next model call', async () => {
    const journal = new MemoryJournal();
    journal.onFlush = async (batch) => {
      // At the write that announces the edit, the edit has not happened yet.
      if (batch.some((r) => r.t === 'tool_start')) expect(await logFile()).toBe('END');
    };
    h.fake.script([{ content: 'Appending.', toolCalls: [APPEND] }, { content: 'Done.' }]);
    const { outcome } = await h.run('append a line', { journal });

    expect(outcome.state).toBe('completed');
    expect(journal.flushes.map((b) => b.map((r) => r.t))).toEqual([['model', 'tool_start'], ['tool_end']]);
    // The final answer is buffered, not written: the commit that follows records it.
    expect(journal.all().map((r) => r.t)).toEqual(['model', 'tool_start', 'tool_end', 'model']);
    expect(await logFile()).toBe('line-1\nEND');
  });

  it('a refused journal write stops the run before the tool: nothing happens and no outcome is reported', async () => {
    const journal = new MemoryJournal();
    journal.onFlush = async () => {
      throw new RunSuspended('fenced', 'another run took the session over');
    };
    h.fake.script([{ content: 'Appending.', toolCalls: [APPEND] }]);
    await expect(h.run('append a line', { journal })).rejects.toMatchObject({ why: 'fenced' });
    expect(await logFile()).toBe('END');
  });
});

describe('a run that takes over a turn resumes from the journal', () => {
  it('after a model response: the model is not asked again; the tool runs once', async () => {
    h.fake.script([{ content: 'Done.' }]);
    const { outcome, events } = await h.run('append a line', { journal: new MemoryJournal([modelAsks([APPEND])]) });

    expect(outcome).toMatchObject({ state: 'completed', answer: 'Done.', steps: 2, modelCalls: 2, toolCalls: 1 });
    expect(outcome.usage.totalTokens).toBeGreaterThan(usage.totalTokens);
    expect(h.fake.requests).toHaveLength(1);
    expect(toolMessages(h.fake.requests[0])[0].content).toMatch(/^Edited log.txt/);
    expect(await logFile()).toBe('line-1\nEND');
    expect(eventsOf(events, 'model_call').map((e) => e.replayed ?? false)).toEqual([true, false]);
    expect(eventsOf(events, 'narration')).toEqual([{ type: 'narration', step: 1, text: 'Appending.', replayed: true }]);
  });

  it('after a side-effecting tool started with no result: it is not run again; the model is told it was interrupted', async () => {
    h.fake.script([{ content: 'I will check the file before doing anything.' }]);
    const journal = new MemoryJournal([modelAsks([APPEND]), started(APPEND)]);
    const { outcome } = await h.run('append a line', { journal });

    expect(outcome.state).toBe('completed');
    const [result] = toolMessages(h.fake.requests[0]);
    expect(result.content).toMatch(/^Error: interrupted: .*edit_file.*may or may not have taken effect; check before repeating it/);
    expect(await logFile()).toBe('END');
    // The interruption is written down too: a later resume gives the model the same answer.
    expect(journal.all().filter((r) => r.t === 'tool_end')).toMatchObject([{ callId: 'call_w', ok: false }]);
  });

  it('after a read-only tool started with no result: it simply runs again', async () => {
    const read = { id: 'call_r', name: 'read_file', arguments: '{"path":"notes.md"}' };
    h.fake.script([{ content: 'The notes say hi.' }]);
    await h.run('read the notes', { journal: new MemoryJournal([modelAsks([read], 'Reading.'), started(read, true)]) });
    expect(toolMessages(h.fake.requests[0])[0].content).toBe('the notes');
  });

  it('after a tool result: the tool is never run again, its recorded result is what the model reads', async () => {
    const recorded: StepRecord = {
      t: 'tool_end',
      step: 1,
      callId: 'call_w',
      name: 'edit_file',
      ok: true,
      content: 'Edited log.txt at line 1 (recorded)',
      summary: 'edit_file log.txt → Edited',
      ms: 3,
    };
    h.fake.script([{ content: 'Done.' }]);
    const { outcome, events } = await h.run('append a line', { journal: new MemoryJournal([modelAsks([APPEND]), started(APPEND), recorded]) });

    expect(outcome.state).toBe('completed');
    expect(await logFile()).toBe('END');
    expect(toolMessages(h.fake.requests[0])[0].content).toBe('Edited log.txt at line 1 (recorded)');
    expect(eventsOf(events, 'tool_end')).toMatchObject([{ ok: true, replayed: true }]);
  });

  it('after the final answer was recorded: the turn completes with it and the model is not asked at all', async () => {
    const final: StepRecord = { t: 'model', step: 1, calls: 1, response: { message: { role: 'assistant', content: 'All done.' }, stopReason: 'stop', usage } };
    const { outcome } = await h.run('hi', { journal: new MemoryJournal([final]) });
    expect(outcome).toMatchObject({ state: 'completed', answer: 'All done.' });
    expect(h.fake.requests).toHaveLength(0);
  });

  it('a shutdown stops the run at the next step boundary; the next run resumes from what it wrote', async () => {
    const suspend = new AbortController();
    const journal = new MemoryJournal();
    h.fake.script([{ content: 'Appending.', toolCalls: [APPEND] }]);
    await expect(h.run('append a line', { journal, suspend: suspend.signal, onEvent: (e) => e.type === 'tool_end' && suspend.abort() })).rejects.toMatchObject({
      why: 'shutdown',
    });
    expect(h.fake.requests).toHaveLength(1);

    h.fake.script([{ content: 'Done.' }]);
    const { outcome } = await h.run('append a line', { journal: new MemoryJournal(journal.all()) });
    expect(outcome).toMatchObject({ state: 'completed', answer: 'Done.', toolCalls: 1 });
    expect(h.fake.requests).toHaveLength(2);
    expect(await logFile()).toBe('line-1\nEND');
  });
});
