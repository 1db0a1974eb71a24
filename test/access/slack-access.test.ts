import { afterEach, describe, expect, it } from 'vitest';
import { APPROVED_TEXT } from '../../src/access/pairing-admin.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { startFakeSlack, BOT_TOKEN, type FakeSlack } from '../fakes/slack-server.js';
import { waitFor } from '../helpers/processes.js';
import type { Stack } from '../helpers/stack.js';
import {
  answers,
  appMention,
  eventCallback,
  newUserTexts,
  nextTs,
  postCommand,
  postEvent,
  SIGNING_SECRET,
  startSlackStack,
} from '../channels/slack/helpers.js';
import {
  ADMIN_TOKEN,
  adminApi,
  adminCli,
  codeIn,
  codesKey,
  expectNothingQueued,
  expectPairingReply,
  expectSessionUntouched,
  FULL_TEXT,
  hasCode,
  jobCounts,
  NOT_ENABLED_TEXT,
  sessionKeys,
  sleep,
  storedRequests,
} from './access-helpers.js';

/**
 * Access control on Slack, end to end: signed Events API requests and /ask through Bolt on the
 * real gateway role, the real worker role, real Redis, the fake Slack Web API and the fake model.
 * Operators decide through the admin API of the gateway and through the admin CLI (its own
 * process, which tells the person through the Slack Web API).
 */

let stack: Stack | undefined;
let slack: FakeSlack | undefined;

afterEach(async () => {
  await stack?.close();
  await slack?.close();
  stack = undefined;
  slack = undefined;
});

async function start(name: string, env: Record<string, string>): Promise<{ stack: Stack; slack: FakeSlack }> {
  slack = await startFakeSlack();
  stack = await startSlackStack(name, slack, { ADMIN_TOKEN, ...env });
  return { stack, slack };
}

/** The environment the admin CLI needs to reach this Slack (to tell an approved person). */
function cliEnv(fake: FakeSlack): Record<string, string> {
  // LINK_PREVIEWS=1 as in startSlackStack: answers() tells the CLI's message from a status message by its unfurl arguments.
  return { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: SIGNING_SECRET, SLACK_API_URL: fake.apiUrl, LINK_PREVIEWS: '1' };
}

/** A DM from `user` in their DM channel with the bot, as Slack posts it; resolves once Bolt has handled it. */
async function dm(s: Stack, user: string, text: string): Promise<string> {
  const ts = nextTs();
  const res = await postEvent(s.baseUrl, eventCallback({ type: 'message', channel: dmOf(user), channel_type: 'im', user, text, ts }));
  expect(res.status).toBe(200);
  return ts;
}

const dmOf = (user: string) => `D${user.slice(1)}`;
const dmSession = (user: string) => sessionKeyOf({ platform: 'slack', conversation: dmOf(user) });
const textsIn = (fake: FakeSlack, channel: string) => answers(fake, channel).map((m) => m.text);

/** Waits for the bot's `n`-th message in `channel` and returns its text. */
async function nthIn(fake: FakeSlack, channel: string, n: number): Promise<string> {
  await waitFor(`bot message #${n} in ${channel}`, () => answers(fake, channel).length >= n, 10_000);
  return answers(fake, channel)[n - 1]!.text;
}

describe('slack DM pairing (DM_POLICY=pairing)', () => {
  it('an unknown DM sender gets a code and nothing is queued; again: the same code; approved via the API they are told, and their next DM is answered', async () => {
    const { stack, slack } = await start('acc-sl-pair', { DM_POLICY: 'pairing' });
    const ada = 'U0ADA';
    const channel = dmOf(ada);
    stack.fake.setHandler((req) => ({ content: `You said: ${newUserTexts(req.body).join(' | ')}` }));

    const firstTs = await dm(stack, ada, 'hello, can you read my notes?');
    const first = await nthIn(slack, channel, 1);
    const code = codeIn(first);
    expectPairingReply(first, code);
    // At the top level of the DM, no reaction on the person's message: nothing was taken.
    expect(answers(slack, channel)[0]!.thread_ts).toBeUndefined();
    expect(slack.reactionLog.get(`${channel}:${firstTs}`)).toBeUndefined();
    await expectNothingQueued(stack);
    await expectSessionUntouched(stack, dmSession(ada));

    // The operator sees who asked, not where to post.
    const listed = await adminApi(stack, 'GET', '/slack');
    expect(listed.status).toBe(200);
    expect(listed.body.pending).toEqual([{ code, platform: 'slack', userId: ada, createdAt: expect.any(Number), expiresAt: expect.any(Number) }]);
    expect(listed.body.pending[0].expiresAt - listed.body.pending[0].createdAt).toBe(3_600_000);
    expect(listed.body.approved).toEqual([]);

    await dm(stack, ada, 'are you there?');
    expect(codeIn(await nthIn(slack, channel, 2))).toBe(code);
    expect(await storedRequests(stack, 'slack')).toHaveLength(1);
    await expectNothingQueued(stack);

    // The API needs the admin token; a code that is not pending is a 404.
    expect((await adminApi(stack, 'POST', `/slack/${code}/approve`, null)).status).toBe(401);
    expect((await adminApi(stack, 'POST', `/slack/${code}/approve`, 'not-the-admin-token')).status).toBe(401);
    expect((await adminApi(stack, 'POST', '/slack/ABCDEFGH/approve')).status).toBe(404);
    expect(await storedRequests(stack, 'slack')).toHaveLength(1);

    const approved = await adminApi(stack, 'POST', `/slack/${code}/approve`);
    expect(approved).toEqual({ status: 200, body: { approved: true, platform: 'slack', userId: ada, told: true } });
    expect(await nthIn(slack, channel, 3)).toBe(APPROVED_TEXT);
    expect(answers(slack, channel)[2]!.thread_ts).toBeUndefined();
    // Used up: the same code cannot be approved twice.
    expect((await adminApi(stack, 'POST', `/slack/${code}/approve`)).status).toBe(404);
    expect((await adminApi(stack, 'GET', '/slack')).body).toMatchObject({
      pending: [],
      approved: [{ platform: 'slack', userId: ada, by: 'api', approvedAt: expect.any(Number) }],
    });

    await dm(stack, ada, 'what is 2+2?');
    expect(await nthIn(slack, channel, 4)).toBe('You said: what is 2+2?');
    // The model saw only the message sent after approval: the refused ones were never shown to it.
    expect(stack.fake.requests).toHaveLength(1);
    const seen = JSON.stringify(stack.fake.requests[0]!.body.messages);
    expect(seen).not.toContain('read my notes');
    expect(seen).not.toContain('are you there');
    await waitFor('the completed job', async () => (await jobCounts(stack)).completed === 1);
    expect(textsIn(slack, channel)).toHaveLength(4);
  });

  it('approved via the CLI for a second user; revoked via the CLI: a code again; an expired code cannot be approved', async () => {
    const { stack, slack } = await start('acc-sl-cli', { DM_POLICY: 'pairing' });
    stack.fake.setHandler((req) => ({ content: `Answer to: ${newUserTexts(req.body).join(' | ')}` }));
    const ada = 'U0ADA';
    const bob = 'U0BOB';

    await dm(stack, ada, 'first in line');
    const adaCode = codeIn(await nthIn(slack, dmOf(ada), 1));
    await dm(stack, bob, 'me too');
    const bobCode = codeIn(await nthIn(slack, dmOf(bob), 1));
    expect(bobCode).not.toBe(adaCode);

    const list = await adminCli(stack, ['list', 'slack'], cliEnv(slack));
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(
      new RegExp(`^pending:\\n  slack  ${adaCode}  user ${ada}  expires in 60 min\\n  slack  ${bobCode}  user ${bob}  expires in 60 min\\napproved: none\\n$`),
    );

    // Bob's code typed the way an operator might: lower case, with a dash.
    const typed = `${bobCode.slice(0, 4).toLowerCase()}-${bobCode.slice(4).toLowerCase()}`;
    const approve = await adminCli(stack, ['approve', 'slack', typed], cliEnv(slack));
    expect({ code: approve.code, stdout: approve.stdout }).toEqual({ code: 0, stdout: `approved slack user ${bob}; told them\n` });
    // The CLI process told Bob through the Web API, in his DM.
    expect(await nthIn(slack, dmOf(bob), 2)).toBe(APPROVED_TEXT);
    expect(textsIn(slack, dmOf(ada))).toHaveLength(1);

    await dm(stack, bob, 'now answer me');
    expect(await nthIn(slack, dmOf(bob), 3)).toBe('Answer to: now answer me');
    expect(stack.fake.requests).toHaveLength(1);
    // Ada is still waiting: her next DM gets her code, not an answer.
    await dm(stack, ada, 'and me?');
    expect(codeIn(await nthIn(slack, dmOf(ada), 2))).toBe(adaCode);
    await expectSessionUntouched(stack, dmSession(ada));

    const revoke = await adminCli(stack, ['revoke', 'slack', bob], cliEnv(slack));
    expect({ code: revoke.code, stdout: revoke.stdout }).toEqual({ code: 0, stdout: `revoked slack user ${bob}\n` });
    await dm(stack, bob, 'still there?');
    const again = await nthIn(slack, dmOf(bob), 4);
    expectPairingReply(again);
    expect(codeIn(again)).not.toBe(bobCode);
    await sleep(200);
    expect(stack.fake.requests).toHaveLength(1);
    expect((await adminApi(stack, 'GET', '/slack')).body.approved).toEqual([]);

    // Ada's hour passes (the stored request's expiry is moved into the past).
    const stored = JSON.parse((await stack.redis.hget(codesKey(stack, 'slack'), adaCode))!) as { expiresAt: number };
    await stack.redis.hset(codesKey(stack, 'slack'), adaCode, JSON.stringify({ ...stored, expiresAt: Date.now() - 1_000 }));
    const expiredCli = await adminCli(stack, ['approve', 'slack', adaCode], cliEnv(slack));
    expect(expiredCli.code).toBe(1);
    expect(expiredCli.stdout).toBe(`no pending code ${adaCode} (codes expire after 1 hour; \`pairing list\` shows the live ones)\n`);
    expect((await adminApi(stack, 'POST', `/slack/${adaCode}/approve`)).status).toBe(404);
    expect((await adminApi(stack, 'GET', '/slack')).body.approved).toEqual([]);
    // Not let in, not told; her code expired unused, so her next DM gets no new code for a day
    // (PAIRING_COOLDOWN_MS: expired codes must not let a few accounts hold every slot).
    await dm(stack, ada, 'hello again');
    const cooldown = await nthIn(slack, dmOf(ada), 3);
    expect(cooldown).toBe('Sorry, this assistant is private, and your last access request has closed. You can ask again in 24 h.');
    expect(textsIn(slack, dmOf(ada))).not.toContain(APPROVED_TEXT);
    await expectSessionUntouched(stack, dmSession(ada));
    expect(stack.fake.requests).toHaveLength(1);
  }, 60_000);

  it('/ask in a DM by an unknown user is answered (ephemerally) with the code; three may wait, the fourth gets no code; a denied request frees a place', async () => {
    const { stack, slack } = await start('acc-sl-cap', { DM_POLICY: 'pairing' });
    const users = ['U0ONE', 'U0TWO', 'U0THREE', 'U0FOUR'];

    const ask = await postCommand(stack.baseUrl, {
      channel_id: dmOf(users[0]!),
      channel_name: 'directmessage',
      user_id: users[0]!,
      user_name: 'one',
      text: 'what is 2+2?',
    });
    expect(ask.status).toBe(200);
    const ack = (await ask.json()) as { response_type: string; text: string };
    expect(ack.response_type).toBe('ephemeral');
    expectPairingReply(ack.text);
    const oneCode = codeIn(ack.text);
    // Only the person who typed it saw the code: nothing was posted, nothing queued.
    expect(slack.callsOf('chat.postMessage')).toEqual([]);
    await expectNothingQueued(stack);
    // The request remembers who asked (the /ask payload names them) and where to tell them, not what they wrote.
    expect(await storedRequests(stack, 'slack')).toEqual([
      expect.objectContaining({ code: oneCode, userId: users[0], name: 'one', to: expect.objectContaining({ conversation: dmOf(users[0]!), text: '' }) }),
    ]);
    expect(JSON.stringify(await stack.redis.hgetall(codesKey(stack, 'slack')))).not.toContain('2+2');

    // The same person in a plain DM: the same code.
    await dm(stack, users[0]!, 'hello?');
    expect(codeIn(await nthIn(slack, dmOf(users[0]!), 1))).toBe(oneCode);

    await dm(stack, users[1]!, 'hi');
    const twoCode = codeIn(await nthIn(slack, dmOf(users[1]!), 1));
    await dm(stack, users[2]!, 'hi');
    codeIn(await nthIn(slack, dmOf(users[2]!), 1));
    await dm(stack, users[3]!, 'hi');
    const full = await nthIn(slack, dmOf(users[3]!), 1);
    expect(full).toBe(FULL_TEXT);
    expect(hasCode(full)).toBe(false);
    expect((await storedRequests(stack, 'slack')).map((r) => r.userId).sort()).toEqual([users[0], users[1], users[2]].sort());
    // /ask by the fourth: the same refusal, no code.
    const askFour = await postCommand(stack.baseUrl, { channel_id: dmOf(users[3]!), user_id: users[3]!, text: 'please' });
    expect(((await askFour.json()) as { text: string }).text).toBe(FULL_TEXT);
    // Someone already waiting still gets their code while the list is full.
    await dm(stack, users[1]!, 'still waiting');
    expect(codeIn(await nthIn(slack, dmOf(users[1]!), 2))).toBe(twoCode);

    // Denied: dropped silently (the person learns nothing new), and a place is free.
    expect(await adminApi(stack, 'POST', `/slack/${twoCode}/deny`)).toEqual({
      status: 200,
      body: { denied: true, platform: 'slack', userId: users[1], told: false },
    });
    await dm(stack, users[3]!, 'and now?');
    const fourCode = codeIn(await nthIn(slack, dmOf(users[3]!), 2));
    expect([oneCode, twoCode]).not.toContain(fourCode);
    await sleep(200);
    expect(textsIn(slack, dmOf(users[1]!))).toHaveLength(2);
    expect(stack.fake.requests).toHaveLength(0);
    expect(await jobCounts(stack)).toEqual({ waiting: 0, active: 0, completed: 0, failed: 0, delayed: 0, prioritized: 0 });
    expect(await sessionKeys(stack)).toEqual([]);

    // The request that came from /ask: once approved, the person is told in their DM.
    expect((await adminApi(stack, 'POST', `/slack/${oneCode}/approve`)).body).toMatchObject({ approved: true, userId: users[0], name: 'one', told: true });
    expect(await nthIn(slack, dmOf(users[0]!), 2)).toBe(APPROVED_TEXT);
  });
});

describe('slack DM allowlist (SLACK_DM_POLICY=allowlist)', () => {
  it('a listed user is answered; anyone else is told the assistant is private and their user id; no code, nothing queued', async () => {
    // DM_POLICY=open on top: the per-platform policy wins.
    const { stack, slack } = await start('acc-sl-allow', { DM_POLICY: 'open', SLACK_DM_POLICY: 'allowlist', ALLOWED_USERS: 'slack:U0ADA' });
    stack.fake.setHandler((req) => ({ content: `Sure: ${newUserTexts(req.body).join(' | ')}` }));

    await dm(stack, 'U0EVE', 'let me in');
    const refused = await nthIn(slack, dmOf('U0EVE'), 1);
    expect(refused).toBe('Sorry, this assistant is private. Your Slack user id is U0EVE: ask its operator for access.');
    await expectNothingQueued(stack);
    expect(await storedRequests(stack, 'slack')).toEqual([]);
    const ask = await postCommand(stack.baseUrl, { channel_id: dmOf('U0EVE'), user_id: 'U0EVE', text: 'please' });
    expect(((await ask.json()) as { text: string }).text).toBe(refused);

    await dm(stack, 'U0ADA', 'hello');
    expect(await nthIn(slack, dmOf('U0ADA'), 1)).toBe('Sure: hello');
    await waitFor('the completed job', async () => (await jobCounts(stack)).completed === 1);
    expect(stack.fake.requests).toHaveLength(1);
    await expectSessionUntouched(stack, dmSession('U0EVE'));
    expect(textsIn(slack, dmOf('U0EVE'))).toHaveLength(1);
  });
});

describe('slack group policy (GROUP_POLICY=allowlist)', () => {
  it('a mention in a listed channel is answered; in another channel it is refused with one line and not queued; DMs disabled: silence', async () => {
    const { stack, slack } = await start('acc-sl-group', { GROUP_POLICY: 'allowlist', ALLOWED_CHANNELS: 'slack:C1', SLACK_DM_POLICY: 'disabled' });
    stack.fake.setHandler((req) => ({ content: `On it: ${newUserTexts(req.body).join(' | ')}` }));

    const outside = nextTs();
    expect((await postEvent(stack.baseUrl, eventCallback(appMention('C2', outside, 'summarise this channel')))).status).toBe(200);
    await waitFor('the refusal in C2', () => answers(slack, 'C2').length === 1);
    expect(answers(slack, 'C2').map((m) => ({ text: m.text, thread_ts: m.thread_ts }))).toEqual([{ text: NOT_ENABLED_TEXT, thread_ts: outside }]);
    await expectNothingQueued(stack);
    expect(slack.reactionLog.get(`C2:${outside}`)).toBeUndefined();
    // Its `message` twin (same channel:ts) is not answered a second time.
    expect(
      await postEvent(stack.baseUrl, eventCallback({ ...appMention('C2', outside, 'summarise this channel'), type: 'message', channel_type: 'channel' })),
    ).toMatchObject({ status: 200 });

    // /ask there: the same line, as the ephemeral acknowledgement.
    const ask = await postCommand(stack.baseUrl, { channel_id: 'C2', user_id: 'U0ADA', text: 'summarise' });
    expect(await ask.json()).toEqual({ response_type: 'ephemeral', text: NOT_ENABLED_TEXT });
    await expectNothingQueued(stack);

    // DMs are disabled for Slack: no reply at all.
    await dm(stack, 'U0ADA', 'hello in private');

    const inside = nextTs();
    expect((await postEvent(stack.baseUrl, eventCallback(appMention('C1', inside, 'summarise this channel')))).status).toBe(200);
    await waitFor('the answer in C1', () => answers(slack, 'C1').length === 1);
    expect(answers(slack, 'C1').map((m) => ({ text: m.text, thread_ts: m.thread_ts }))).toEqual([{ text: 'On it: summarise this channel', thread_ts: inside }]);
    await waitFor('the completed job', async () => (await jobCounts(stack)).completed === 1);
    await sleep(200);
    expect(stack.fake.requests).toHaveLength(1);
    await expectSessionUntouched(stack, sessionKeyOf({ platform: 'slack', conversation: 'C2', thread: outside }));
    await expectSessionUntouched(stack, dmSession('U0ADA'));
    expect(answers(slack, 'C2')).toHaveLength(1);
    expect(answers(slack, dmOf('U0ADA'))).toEqual([]);
    expect(slack.ephemerals).toEqual([]);
  });
});
