import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction } from '../../fakes/discord-server.js';
import { waitFor } from '../../helpers/processes.js';
import { startStack, type Stack } from '../../helpers/stack.js';
import { PLACEHOLDER } from '../../../src/channels/kit/pieces.js';

/**
 * A reply whose delivery stops after its first piece reached Discord: the next attempt (the job's
 * retry) posts the missing pieces only, through the journal's record of what Discord confirmed.
 */
let world: { fake: FakeDiscord; stack: Stack } | undefined;
afterEach(async () => {
  await world?.stack.close();
  await world?.fake.close();
  world = undefined;
});

const longAnswer = () => Array.from({ length: 3 }, (_, i) => `Part ${i + 1}. ${'All of this is the answer. '.repeat(68).trim()}`).join('\n\n');

describe('Discord: a long /ask answer whose second piece is refused once', () => {
  it('resumes with the missing pieces only: three pieces in order, none twice', async () => {
    const fake = await startFakeDiscord();
    const stack = await startStack('dc-redeliver', fake.env({}));
    world = { fake, stack };
    const channel = stack.gateway.channels.find((c) => c.name === 'discord')!;
    await waitFor('the Discord gateway to be ready', () => channel.health().connected, 15_000);
    const answer = longAnswer();
    stack.fake.script([{ content: answer }]);
    // The first follow-up meets a 429 longer than the adapter waits: nothing was posted, the attempt fails.
    fake.fail({ method: 'POST', path: /^\/webhooks\/\d+\/[^/]+$/, status: 429, retryAfter: 120, times: 1 });
    const ix: FakeInteraction = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'the long answer' });

    // A follow-up is posted as a placeholder (it takes no nonce) and edited into its piece.
    await waitFor(
      'both follow-ups',
      () => ix.followups.length === 2 && ix.followups.every((id) => fake.messages.find((m) => m.id === id)?.content !== PLACEHOLDER),
      30_000,
    );
    const followups = ix.followups.map((id) => fake.messages.find((m) => m.id === id)!.content);
    const first = fake.messages.find((m) => m.id === ix.originalId)!;
    expect([first.content, ...followups].map((p) => p.slice(0, 7))).toEqual(['Part 1.', 'Part 2.', 'Part 3.']);
    // The first piece was edited into the response once with the answer, never again.
    expect(first.history.filter((h) => h.startsWith('Part 1.'))).toHaveLength(1);
    // The refused placeholder was posted again; each piece was edited in once.
    expect(fake.calls('POST', /^\/webhooks\/\d+\/[^/]+$/).map((r) => r.body.content)).toEqual([PLACEHOLDER, PLACEHOLDER, PLACEHOLDER]);
    expect(fake.calls('PATCH', /^\/webhooks\/\d+\/[^/]+\/messages\/\d+$/).map((r) => String(r.body.content).slice(0, 7))).toEqual(['Part 2.', 'Part 3.']);
    expect(stack.fake.requests).toHaveLength(1);
  }, 60_000);
});
