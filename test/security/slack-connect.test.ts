import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSlack, TEAM_ID, type FakeSlack } from '../fakes/slack-server.js';
import { waitFor } from '../helpers/processes.js';
import type { Stack } from '../helpers/stack.js';
import { answers, appMention, eventCallback, newUserTexts, nextTs, postEvent, startSlackStack } from '../channels/slack/helpers.js';
import { sleep } from '../access/access-helpers.js';

/**
 * Finding (high, Slack's form): the group default lets in members of the installing workspace in
 * its channels, but not users of another organisation in a shared (Slack Connect) channel: they
 * need pairing or ALLOWED_USERS like any stranger. Real Bolt on the gateway, the fake Slack.
 */
let stack: Stack | undefined;
let slack: FakeSlack | undefined;
afterEach(async () => {
  await stack?.close();
  await slack?.close();
  stack = slack = undefined;
});

describe('security: Slack channels vouch for their own workspace only', () => {
  it('defaults: a member of the installing workspace is answered in a channel; a Slack Connect user is refused once and nothing of theirs is queued', async () => {
    slack = await startFakeSlack();
    stack = await startSlackStack('sec-slack-connect', slack, { DM_POLICY: 'pairing', USER_RATE_LIMIT: '0' });
    const s = stack;
    s.fake.setHandler((req) => ({ content: `On it: ${newUserTexts(req.body).join(' | ')}` }));

    const foreign = nextTs();
    await postEvent(s.baseUrl, eventCallback(appMention('C0SHARED', foreign, 'export the customer list', { user: 'U0OUTSIDER', user_team: 'T0OTHERORG' })));
    await waitFor('the notice', () => answers(slack!, 'C0SHARED').length === 1);
    expect(answers(slack, 'C0SHARED')[0]!.text).toBe('Sorry, I only answer people who have access. Send me a direct message to ask for it.');
    await postEvent(s.baseUrl, eventCallback(appMention('C0SHARED', nextTs(), 'please', { user: 'U0OUTSIDER', user_team: 'T0OTHERORG' })));
    await sleep(800);
    expect(answers(slack, 'C0SHARED')).toHaveLength(1);
    expect(s.fake.requests).toHaveLength(0);

    const home = nextTs();
    await postEvent(s.baseUrl, eventCallback(appMention('C0SHARED', home, 'summarise the thread', { user: 'U0ADA', user_team: TEAM_ID })));
    await waitFor('the answer', () => answers(slack!, 'C0SHARED').some((m) => m.text === 'On it: summarise the thread'));
    expect(s.fake.requests.flatMap((r) => newUserTexts(r.body))).toEqual(['summarise the thread']);
  }, 60_000);
});
