import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER } from '../../../src/channels/kit/pieces.js';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction, type RecordedRequest } from '../../fakes/discord-server.js';
import { KillRig, type Holds } from '../../helpers/kill-rig.js';

// A worker process killed between marking an answer's piece started and Discord's answer: once
// before the request left, once after Discord stored the message. Every channel piece carries a
// nonce derived from the message it answers, with enforce_nonce, so the next worker's resend
// returns the message Discord already made instead of making a second one.
describe('discord: a worker killed while posting an answer (real processes, SIGKILL)', () => {
  let fake: FakeDiscord;
  let rig: KillRig;
  let holds: Holds<RecordedRequest>;

  beforeAll(async () => {
    fake = await startFakeDiscord();
    holds = { requests: (h) => fake.holdRequests(h), responses: (h) => fake.holdResponses(h) };
    rig = await KillRig.start(
      'dckill',
      fake.env(),
      () => fake.gateway.identifies.length > 0 && fake.gateway.active !== undefined,
      (text) => (text.startsWith('long') ? longAnswer(text) : `answer to ${text}`),
    );
  }, 90_000);

  afterAll(async () => {
    await rig?.close();
    await fake?.close();
  });

  const answers = (channel: string, question: string) => fake.botMessages(channel).filter((m) => m.content.includes(`answer to ${question}`));
  const answerPost = (channel: string) => (r: RecordedRequest) =>
    r.method === 'POST' && r.path === `/channels/${channel}/messages` && String(r.body?.content).includes('answer to');

  for (const at of ['request', 'response'] as const) {
    it(`killed ${at === 'request' ? 'before the post reached Discord' : 'after Discord stored the message, before its answer came back'}: exactly one answer`, async () => {
      const channel = fake.ids.general;
      const question = `question ${at}`;
      await rig.killAt(
        holds,
        at,
        answerPost(channel),
        () => void fake.userMessage({ channel, content: `<@${fake.ids.app}> ${question}` }),
        () => answers(channel, question).length > 0,
      );
      expect(answers(channel, question).map((m) => m.content)).toEqual([`answer to ${question}`]);
      const posts = fake.calls('POST', new RegExp(`^/channels/${channel}/messages$`)).filter((r) => String(r.body?.content).includes(`answer to ${question}`));
      // The dead worker's attempt and the next worker's resend, with one nonce.
      expect(posts.length).toBeGreaterThanOrEqual(2);
      expect(new Set(posts.map((r) => r.body.nonce)).size).toBe(1);
      if (at === 'request') expect(posts[0]!.dropped).toBe(true);
    }, 120_000);
  }

  it('a slash command\'s follow-up (no nonce) killed after Discord stored its placeholder: every piece once, one orphan "…" at most', async () => {
    const prompt = 'long answer please';
    let ix: FakeInteraction | undefined;
    const followUps = () => (ix?.followups ?? []).map((id) => fake.messages.find((m) => m.id === id)!).filter((m) => !m.deleted);
    await rig.killAt(
      holds,
      'response',
      // The first follow-up's create, whatever it carries (its placeholder, or the piece itself were it posted directly).
      (r) =>
        r.method === 'POST' && /^\/webhooks\/\d+\/[^/]+$/.test(r.path) && (r.body?.content === PLACEHOLDER || String(r.body?.content).startsWith('Part 2.')),
      () => void (ix = fake.slash({ name: 'ask', channel: fake.ids.general, prompt })),
      () => followUps().filter((m) => m.content.startsWith('Part 3.')).length > 0,
    );
    const original = fake.messages.find((m) => m.id === ix!.originalId)!;
    const shown = [original.content, ...followUps().map((m) => m.content)];
    expect(shown.filter((c) => c !== PLACEHOLDER).map((c) => c.slice(0, 7))).toEqual(['Part 1.', 'Part 2.', 'Part 3.']);
    expect(shown.filter((c) => c === PLACEHOLDER).length).toBeLessThanOrEqual(1);
  }, 120_000);
});

/** Three pieces over Discord's 2,000 characters each time. */
const longAnswer = (text: string) => Array.from({ length: 3 }, (_, i) => `Part ${i + 1}. ${`All of this answers "${text}". `.repeat(40).trim()}`).join('\n\n');
