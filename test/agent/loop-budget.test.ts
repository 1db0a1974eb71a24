import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StepJournal, StepRecord, TokenAllowance, TokenReservation } from '../../src/agent/types.js';
import { startHarness, type Harness } from './harness.js';

/**
 * An allowance in memory, with the store's rule: a call is reserved by its estimate unless that
 * would go over what is left (spent and held), and settled to what it was charged.
 */
class CountingAllowance implements TokenAllowance {
  /** What each settled call was charged. */
  readonly spends: number[] = [];
  /** The estimate of each reservation asked for. */
  readonly estimates: number[] = [];
  checks = 0;
  held = 0;
  constructor(
    private readonly limit: number,
    public spent = 0,
  ) {}
  async reserve(estimate: number) {
    this.checks++;
    this.estimates.push(estimate);
    if (this.spent + this.held + estimate > this.limit) return { ok: false, detail: `${this.spent} of ${this.limit}` } as const;
    this.held += estimate;
    return { ok: true, reservation: { tokens: estimate } } as const;
  }
  async settle(reservation: TokenReservation, tokens: number) {
    this.held -= reservation.tokens;
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
  it('counts each fresh model call from its reported usage, and refuses the next call once its estimate no longer fits the budget', async () => {
    const budget = new CountingAllowance(2500);
    const BIG = { prompt_tokens: 900, completion_tokens: 100 };
    h.fake.script([
      { content: 'Reading.', toolCalls: [READ], usage: BIG },
      { content: 'Reading again.', toolCalls: [{ ...READ, id: 'call_r2' }], usage: BIG },
    ]);
    const { outcome } = await h.run('read the notes', { budget });

    // 500 tokens are left, less than the third prompt's estimate: it is refused before it goes over.
    expect(outcome).toMatchObject({ state: 'failed', reason: 'budget', detail: '2000 of 2500', steps: 2, modelCalls: 2 });
    expect(budget.spends).toEqual([1000, 1000]);
    // Reserved before each of the three steps, by the prompt's estimate; the third was refused, and the model never heard of it.
    expect(budget.checks).toBe(3);
    expect(budget.estimates[2]).toBeGreaterThan(500);
    expect(budget.held).toBe(0);
    expect(h.fake.requests).toHaveLength(2);
    h.fake.assertDone();
  });

  it('a retried call keeps its reservation while the failed attempt used nothing, and settles once', async () => {
    const budget = new CountingAllowance(10_000);
    h.fake.script([{ status: 503 }, { content: 'Hello.', usage: USAGE }]);
    const { outcome } = await h.run('hello', { budget });
    expect(outcome).toMatchObject({ state: 'completed', modelCalls: 2 });
    expect(budget.checks).toBe(1);
    expect(budget.spends).toEqual([600]);
    expect(budget.held).toBe(0);
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
        t: 'model',
        step: 1,
        calls: 1,
        response: {
          message: {
            role: 'assistant',
            content: 'Reading.',
            tool_calls: [{ id: READ.id, type: 'function', function: { name: READ.name, arguments: READ.arguments } }],
          },
          stopReason: 'toolUse',
          usage: { promptTokens: 500, completionTokens: 100, totalTokens: 600 },
        },
      },
      { t: 'tool_start', step: 1, callId: READ.id, name: READ.name, args: READ.arguments, readOnly: true },
      { t: 'tool_end', step: 1, callId: READ.id, name: READ.name, ok: true, content: 'the notes', summary: 'read notes.md', ms: 1 },
    ];
    // The earlier run was charged its 600 already: the budget store holds them.
    const budget = new CountingAllowance(2000, 600);
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
        t: 'model',
        step: 1,
        calls: 1,
        response: {
          message: {
            role: 'assistant',
            content: 'Reading.',
            tool_calls: [{ id: READ.id, type: 'function', function: { name: READ.name, arguments: READ.arguments } }],
          },
          stopReason: 'toolUse',
          usage: { promptTokens: 500, completionTokens: 100, totalTokens: 600 },
        },
      },
    ];
    const budget = new CountingAllowance(1000, 1000);
    const { outcome } = await h.run('read the notes', { budget, journal: journalOf(recorded) });
    expect(outcome).toMatchObject({ state: 'failed', reason: 'budget', steps: 1, toolCalls: 1 });
    expect(budget.spends).toEqual([]);
    expect(h.fake.requests).toHaveLength(0);
  });
});
