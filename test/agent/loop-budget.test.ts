import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StepJournal, StepRecord, TokenAllowance } from '../../src/agent/types.js';
import { startHarness, type Harness } from './harness.js';

/** An allowance in memory: what the loop was charged, and a limit it refuses at. */
class CountingAllowance implements TokenAllowance {
  readonly spends: number[] = [];
  checks = 0;
  constructor(
    private readonly limit: number,
    public spent = 0,
  ) {}
  async check() {
    this.checks++;
    return this.spent < this.limit ? ({ ok: true } as const) : ({ ok: false, detail: `${this.spent} of ${this.limit}` } as const);
  }
  async spend(tokens: number) {
    this.spends.push(tokens);
    this.spent += tokens;
  }
}

const journalOf = (recorded: StepRecord[]): StepJournal => ({ recorded, record: () => undefined, flush: async () => undefined });
const READ = { id: 'call_r', name: 'read_file', arguments: '{"path":"notes.md"}' };
const USAGE = { prompt_tokens: 500, completion_tokens: 100 };

let h: Harness;
beforeEach(async () => {
  h = await startHarness({ 'notes.md': 'the notes' });
});
afterEach(async () => {
  await h.close();
});

describe("the requester's token budget in the loop", () => {
  it('counts each fresh model call from its reported usage, and refuses the next call once the budget is reached', async () => {
    const budget = new CountingAllowance(1000);
    h.fake.script([
      { content: 'Reading.', toolCalls: [READ], usage: USAGE },
      { content: 'Reading again.', toolCalls: [{ ...READ, id: 'call_r2' }], usage: USAGE },
    ]);
    const { outcome } = await h.run('read the notes', { budget });

    expect(outcome).toMatchObject({ state: 'failed', reason: 'budget', detail: '1200 of 1000', steps: 2, modelCalls: 2 });
    expect(budget.spends).toEqual([600, 600]);
    // Asked before each of the three steps; the third was refused, and the model never heard of it.
    expect(budget.checks).toBe(3);
    expect(h.fake.requests).toHaveLength(2);
    h.fake.assertDone();
  });

  it('a person already over the budget gets no model call at all', async () => {
    const budget = new CountingAllowance(1000, 1000);
    const { outcome } = await h.run('hello', { budget });
    expect(outcome).toMatchObject({ state: 'failed', reason: 'budget', steps: 0, modelCalls: 0 });
    expect(h.fake.requests).toHaveLength(0);
  });

  it('a response replayed from the journal is neither checked nor counted again; only the fresh call is', async () => {
    const recorded: StepRecord[] = [
      {
        t: 'model', step: 1, calls: 1,
        response: { message: { role: 'assistant', content: 'Reading.', tool_calls: [{ id: READ.id, type: 'function', function: { name: READ.name, arguments: READ.arguments } }] }, stopReason: 'toolUse', usage: { promptTokens: 500, completionTokens: 100, totalTokens: 600 } },
      },
      { t: 'tool_start', step: 1, callId: READ.id, name: READ.name, args: READ.arguments, readOnly: true },
      { t: 'tool_end', step: 1, callId: READ.id, name: READ.name, ok: true, content: 'the notes', summary: 'read notes.md', ms: 1 },
    ];
    // The earlier run was charged its 600 already: the budget store holds them.
    const budget = new CountingAllowance(1000, 600);
    h.fake.script([{ content: 'The notes say: the notes.', usage: USAGE }]);
    const { outcome } = await h.run('read the notes', { budget, journal: journalOf(recorded) });

    expect(outcome).toMatchObject({ state: 'completed', steps: 2, modelCalls: 2 });
    // The run's own usage still shows the whole turn; the budget was charged for the fresh call only.
    expect(outcome.usage.totalTokens).toBe(1200);
    expect(budget.spends).toEqual([600]);
    expect(budget.checks).toBe(1);
    expect(budget.spent).toBe(1200);
  });

  it('a resumed turn whose person is now over the budget replays what was journaled, then stops before the next call', async () => {
    const recorded: StepRecord[] = [
      {
        t: 'model', step: 1, calls: 1,
        response: { message: { role: 'assistant', content: 'Reading.', tool_calls: [{ id: READ.id, type: 'function', function: { name: READ.name, arguments: READ.arguments } }] }, stopReason: 'toolUse', usage: { promptTokens: 500, completionTokens: 100, totalTokens: 600 } },
      },
    ];
    const budget = new CountingAllowance(1000, 1000);
    const { outcome } = await h.run('read the notes', { budget, journal: journalOf(recorded) });
    expect(outcome).toMatchObject({ state: 'failed', reason: 'budget', steps: 1, toolCalls: 1 });
    expect(budget.spends).toEqual([]);
    expect(h.fake.requests).toHaveLength(0);
  });
});
