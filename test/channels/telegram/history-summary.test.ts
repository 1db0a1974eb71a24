import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import type { HistorySummary } from '../../../src/agent/summary.js';
import type { RecordedRequest } from '../../fakes/openai-server.js';
import { waitFor } from '../../helpers/processes.js';
import { TelegramHarness } from './harness.js';

const SUMMARISER = 'You keep the running summary';
const fact = (n: number) => `fact ${String(n).padStart(2, '0')}: ${'the sky is a particular shade of blue '.repeat(4)}`;
const isSummary = (r: RecordedRequest) => String((r.body.messages as ChatMessage[])[0]!.content).startsWith(SUMMARISER);
const counter = (h: TelegramHarness, outcome: string) =>
  h.stack.metrics.historySummaries.get().then((m) => m.values.find((v) => v.labels.outcome === outcome)?.value ?? 0);

describe('telegram: a long conversation is summarised past AGENT_HISTORY_TOKENS, nothing lost in Redis', () => {
  let h: TelegramHarness;
  let summaryFails = false;
  beforeAll(async () => {
    // Six turns of facts overflow it once, the summary (a marked data block) included.
    h = await TelegramHarness.start('tg-summary', { AGENT_HISTORY_TOKENS: '260' });
    h.stack.fake.setHandler((req) => {
      const messages = req.body.messages as ChatMessage[];
      if (String(messages[0]!.content).startsWith(SUMMARISER)) {
        if (summaryFails) return { status: 500 };
        const facts = [...String(messages[1]!.content).matchAll(/fact (\d\d)/g)].map((m) => m[1]);
        return { content: `SUMMARY of facts ${facts.join(',')}` };
      }
      const last = String(messages.at(-1)!.content);
      return { content: `noted ${last.slice(5, 7)}` };
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  const chat = 3101;
  const session = `telegram:${chat}`;
  async function say(n: number): Promise<void> {
    h.dm(chat, fact(n));
    await waitFor(`the answer to fact ${n}`, () => h.answers(chat).length === n, 30_000);
  }

  it('the older turns go into one summary request; the next prompt carries the summary and the recent turns; every raw turn stays', async () => {
    for (let n = 1; n <= 6; n++) await say(n);
    const requests = h.stack.fake.requests;
    const summaries = requests.filter(isSummary);
    expect(summaries.length).toBe(1);
    const asked = String((summaries[0]!.body.messages as ChatMessage[])[1]!.content);
    expect(asked).toContain('Summary so far:\n(none yet)');
    const summarised = [...asked.matchAll(/Person: fact (\d\d)/g)].map((m) => Number(m[1]));
    expect(summarised.length).toBeGreaterThan(0);
    // Oldest first, consecutive, from the first turn.
    expect(summarised).toEqual(summarised.map((_, i) => i + 1));

    const stored = JSON.parse((await h.stack.redis.get(h.stack.keys.historySummary(session)))!) as HistorySummary;
    expect(stored.covers).toBe(summarised.length);
    expect(stored.text).toBe(`SUMMARY of facts ${summarised.map((n) => String(n).padStart(2, '0')).join(',')}`);

    // The answer request right after the summary: the summary as data in a user-side message (never in the system prompt), then only the turns after it.
    const answer = requests[requests.indexOf(summaries[0]!) + 1]!;
    const messages = answer.body.messages as ChatMessage[];
    expect(messages[0]!.role).toBe('system');
    expect(String(messages[0]!.content)).not.toContain(stored.text);
    expect(messages[1]!.role).toBe('user');
    expect(String(messages[1]!.content)).toContain(
      `<untrusted-data kind="a summary of earlier turns">\nEarlier in this conversation: your summary of the ${stored.covers} earliest turns, which are no longer shown:\n${stored.text}\n</untrusted-data>`,
    );
    const shown = messages
      .slice(2)
      .filter((m) => m.role === 'user')
      .map((m) => Number(String(m.content).slice(5, 7)));
    const current = shown.at(-1)!;
    expect(shown).toEqual(Array.from({ length: current - stored.covers }, (_, i) => stored.covers + 1 + i));

    expect(await h.stack.redis.llen(h.stack.keys.history(session))).toBe(6);
    expect(await h.stack.redis.get(h.stack.keys.historyCount(session))).toBe('6');
    expect(await counter(h, 'ok')).toBe(1);
    // Every answer arrived once, in order.
    expect(h.answers(chat).map((c) => c.body.text)).toEqual([1, 2, 3, 4, 5, 6].map((n) => `noted ${String(n).padStart(2, '0')}`));
  });

  it('a failed summary does not block the answer or lose history: the turn goes on with the newest turns that fit', async () => {
    summaryFails = true;
    const before = h.stack.fake.requests.length;
    const coveredBefore = (JSON.parse((await h.stack.redis.get(h.stack.keys.historySummary(session)))!) as HistorySummary).covers;
    let n = 7;
    while ((await counter(h, 'failed')) === 0 && n <= 14) await say(n++);
    expect(await counter(h, 'failed')).toBe(1);
    const after = h.stack.fake.requests.slice(before);
    const failedAt = after.findIndex(isSummary);
    const answer = after[failedAt + 1]!;
    expect(isSummary(answer)).toBe(false);
    // The old summary is still used and still stored; no raw turn is gone.
    expect(String((answer.body.messages as ChatMessage[])[1]!.content)).toContain('Earlier in this conversation: your summary');
    expect((JSON.parse((await h.stack.redis.get(h.stack.keys.historySummary(session)))!) as HistorySummary).covers).toBe(coveredBefore);
    expect(await h.stack.redis.llen(h.stack.keys.history(session))).toBe(n - 1);
    expect(h.answers(chat)).toHaveLength(n - 1);

    // It recovers at the next turn.
    summaryFails = false;
    await say(n);
    expect(await counter(h, 'ok')).toBe(2);
  });

  it('/reset forgets the summary with the turns', async () => {
    expect(await h.stack.redis.exists(h.stack.keys.historySummary(session))).toBe(1);
    const answered = h.answers(chat).length;
    h.dm(chat, '/reset');
    await waitFor('the reset', () => h.answers(chat).length === answered + 1, 15_000);
    expect(await h.stack.redis.exists(h.stack.keys.history(session), h.stack.keys.historyCount(session), h.stack.keys.historySummary(session))).toBe(0);
  });
});
