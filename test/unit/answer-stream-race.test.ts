import { describe, expect, it } from 'vitest';
import type { InboundMessage, OutboundAdapter, StreamShown } from '../../src/channels/types.js';
import { AnswerStream } from '../../src/run/delivery/answer-stream.js';
import type { StreamEntry } from '../../src/session/journal.js';
import { createLogger } from '../../src/log.js';

const to = { v: 1, id: 'm', platform: 'x', conversation: 'c', sender: { id: 'u' }, text: '', attachments: [], eventId: 'e', receivedAt: 0 } as InboundMessage;
const LONG = 'The first step writes enough words to be streamed into a message of its own, well past the threshold.';

/** An outbound whose first streamAnswer is held until `release()`: a slow platform, or a 429 being waited out. */
function slowOutbound() {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let posts = 0;
  const finished: { ids: string[]; text: string }[] = [];
  const writes: { text: string; onto: string[] }[] = [];
  const out = {
    platform: 'x',
    editIntervalMs: 0,
    async streamAnswer(_to: InboundMessage, text: string, shown: StreamShown): Promise<StreamShown> {
      writes.push({ text, onto: shown.ids });
      if (posts === 0) await held;
      return shown.ids.length > 0 ? { ids: shown.ids, texts: [text] } : { ids: [`msg${++posts}`], texts: [text] };
    },
    async finishStream(_to: InboundMessage, shown: StreamShown, text: string): Promise<string[]> {
      finished.push({ ids: shown.ids, text });
      return shown.ids;
    },
  } as unknown as OutboundAdapter;
  return { out, release, finished, writes };
}

describe('a streamed step that ends while its first write is still out', () => {
  it("keeps that message as the step's own (settled as interim); the next step streams into a new one", async () => {
    const { out, release, finished, writes } = slowOutbound();
    const journal: StreamEntry[] = [];
    const stream = new AnswerStream(out, to, createLogger('silent'), async (e) => void journal.push(e), undefined);
    stream.onEvent({ type: 'answer_text', step: 1, text: LONG });
    await new Promise((r) => setTimeout(r, 10));
    // The model went on to step 2 before the platform answered step 1's post.
    stream.onEvent({ type: 'answer_text', step: 2, text: `Step two also writes a long text. ${LONG}` });
    release();
    await new Promise((r) => setTimeout(r, 50));
    await stream.stop();
    expect(journal.filter((e) => e.interim).map((e) => [e.step, e.shown.ids])).toEqual([[1, ['msg1']]]);
    expect(finished).toEqual([{ ids: ['msg1'], text: LONG }]);
    // Step 2 never wrote onto step 1's message.
    expect(writes.filter((w) => w.text.startsWith('Step two')).map((w) => w.onto)).toEqual([[]]);
    expect(journal.filter((e) => !e.interim).map((e) => [e.step, e.shown.ids])).toEqual([[2, ['msg2']]]);
  });
});
