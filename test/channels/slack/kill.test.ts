import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAY_REPEAT_NOTE } from '../../../src/channels/kit/pieces.js';
import { BOT_TOKEN, startFakeSlack, type Call, type FakeSlack } from '../../fakes/slack-server.js';
import { KillRig, type Holds } from '../../helpers/kill-rig.js';
import { freePort } from '../../helpers/ports.js';
import { appMention, eventCallback, nextTs, postEvent, SIGNING_SECRET } from './helpers.js';

// A worker process killed between marking an answer's piece started and Slack's answer: once
// before the request left, once after Slack stored the message. chat.postMessage has no
// idempotency key, so each piece names itself in message metadata and the next worker looks for
// it in the thread (conversations.replies) before it posts again (src/channels/slack/find-piece.ts).
describe('slack: a worker killed while posting an answer (real processes, SIGKILL)', () => {
  const channel = 'C0KILL';
  let slack: FakeSlack;
  let rig: KillRig;
  let holds: Holds<Call>;
  let base: string;

  beforeAll(async () => {
    slack = await startFakeSlack();
    holds = { requests: (h) => slack.holdRequests(h), responses: (h) => slack.holdResponses(h) };
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    rig = await KillRig.start(
      'slkill',
      { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: SIGNING_SECRET, SLACK_API_URL: slack.apiUrl, PORT: String(port) },
      () => slack.callsOf('auth.test').length > 0,
    );
  }, 90_000);

  afterAll(async () => {
    await rig?.close();
    await slack?.close();
  });

  const answers = (question: string) => slack.messages.filter((m) => m.channel === channel && !m.deleted && m.text.includes(`answer to ${question}`));

  for (const at of ['request', 'response'] as const) {
    it(`killed ${at === 'request' ? 'before the post reached Slack' : 'after Slack stored the message, before its answer came back'}: exactly one answer, no may-repeat note`, async () => {
      const question = `question ${at}`;
      const ts = nextTs();
      // The mention the answer threads under, as the listings show it.
      slack.addMessage(channel, question, { ts });
      const post = (c: Call) => c.method === 'chat.postMessage' && String(c.params.text).includes(`answer to ${question}`);
      await rig.killAt(
        holds,
        at,
        post,
        () => void postEvent(base, eventCallback(appMention(channel, ts, question))),
        () => answers(question).length > 0,
      );
      expect(answers(question).map((m) => m.text)).toEqual([`answer to ${question}`]);
      expect(answers(question).some((m) => m.text.startsWith(MAY_REPEAT_NOTE))).toBe(false);
      // The next worker looked before it posted: once when nothing had landed (and posted), once when the piece had (and did not).
      expect(slack.callsOf('conversations.replies').length).toBeGreaterThanOrEqual(1);
      const posts = slack.callsOf('chat.postMessage', true).filter(post);
      expect(posts.length).toBe(at === 'request' ? 2 : 1);
      if (at === 'request') expect(posts[0]!.dropped).toBe(true);
    }, 120_000);
  }
});
