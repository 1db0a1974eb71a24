import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { workspaceFolderName } from '../../../src/tools/workspace.js';
import { cardMessage, SECTION_TEXT_LIMIT } from '../../../src/channels/slack/approval-card.js';
import { approvalAction, parseApprovalAction } from '../../../src/channels/slack/approval-data.js';
import { startStack, type Stack, readyz } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/processes.js';
import { APP_TOKEN, BOT_TOKEN, startFakeSlack, type FakeMessage, type FakeSlack } from '../../fakes/slack-server.js';
import {
  appMention,
  blockActions,
  buttonsOf,
  cards,
  eventCallback,
  nextTs,
  postEvent,
  postInteraction,
  signed,
  SIGNING_SECRET,
  type SlackUser,
} from './helpers.js';

const CHANNEL = 'C0APPROVE';
const ADA: SlackUser = { id: 'U0ADA', username: 'ada' };
const BOB: SlackUser = { id: 'U0BOB', username: 'bob' };
const BOSS: SlackUser = { id: 'U0BOSS', username: 'boss' };
const EDIT = { name: 'edit_file', arguments: JSON.stringify({ path: 'log.txt', old_text: 'END', new_text: 'line-1\nEND' }) };

/** The model asks for the edit, then answers with the tool's result once it has one. */
function scriptModel(stack: Stack): void {
  stack.fake.setHandler((req) => {
    const messages = req.body.messages as ChatMessage[];
    const last = messages.at(-1)!;
    return last.role === 'tool' ? { content: `result: ${String(last.content)}` } : { content: 'I will append the line.', toolCalls: [EDIT] };
  });
}

/** A file in the workspace of the thread a top-level mention at `ts` starts; returns its reader. */
async function workspaceFile(stack: Stack, ts: string): Promise<() => Promise<string>> {
  const dir = join(stack.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'slack', conversation: CHANNEL, thread: ts })));
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'log.txt'), 'END');
  return () => readFile(join(dir, 'log.txt'), 'utf8');
}

const cardIn = (slack: FakeSlack, thread: string) => waitFor('the approval card', () => cards(slack, CHANNEL).find((m) => m.thread_ts === thread), 15_000);
const resultIn = (slack: FakeSlack, thread: string) =>
  waitFor('the answer', () => slack.messages.find((m) => m.thread_ts === thread && m.text.startsWith('result:')), 15_000);
const ephemeralTo = (slack: FakeSlack, user: string, n: number) =>
  waitFor(`ephemeral #${n} to ${user}`, () => slack.ephemerals.filter((e) => e.user === user)[n - 1], 10_000);
const blockTypes = (m: FakeMessage) => m.blocks!.map((b) => b.type);

describe('approval card blocks and button payloads', () => {
  const card = { id: 'abcDEF123_-x', tool: 'edit_file', requester: 'U0ADA', expiresAt: Date.UTC(2030, 0, 1, 14, 5) };

  it('the buttons carry the approval id in their value and the decision in their fixed action id', () => {
    expect(approvalAction('abc', 'approved')).toEqual({ action_id: 'sb_approve', value: 'ap:abc' });
    expect(approvalAction('abc', 'denied')).toEqual({ action_id: 'sb_deny', value: 'ap:abc' });
    expect(parseApprovalAction({ action_id: 'sb_deny', value: 'ap:abc' })).toEqual({ id: 'abc', decision: 'denied' });
    expect(parseApprovalAction({ action_id: 'sb_other', value: 'ap:abc' })).toBeNull();
    expect(parseApprovalAction({ action_id: 'sb_approve', value: 'ap:a b' })).toBeNull();
    expect(parseApprovalAction({ action_id: 'sb_approve' })).toBeNull();
  });

  it('escapes the call, keeps a ``` inside it from closing the code block, mentions who asked', () => {
    const { blocks, text } = cardMessage({ ...card, tool: 'run_command', args: JSON.stringify({ command: 'echo "<@U0X> & ```x```" > out' }) });
    expect(blocks[0]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: '*Run this command in the workspace?*\n```\necho "&lt;@U0X&gt; &amp; `\u200b``x`\u200b``" &gt; out\n```' },
    });
    expect(blocks[1]).toEqual({ type: 'context', elements: [{ type: 'mrkdwn', text: 'Asked by <@U0ADA>. Waits until 14:05 UTC; no answer counts as deny.' }] });
    expect(text).toContain('Asked by <@U0ADA>.');
  });

  it('clips a very long call so the section stays under Slack’s 3,000 characters, saying how much is left out', () => {
    const { blocks } = cardMessage({ ...card, args: JSON.stringify({ path: 'big.txt', content: '<&>'.repeat(5_000) }) });
    const section = (blocks[0] as { text: { text: string } }).text.text;
    expect(section.length).toBeLessThanOrEqual(SECTION_TEXT_LIMIT);
    expect(section).toMatch(/\n… \(\d+ more characters\)\n```$/);
    expect(section).not.toMatch(/&(?!amp;|lt;|gt;)/);
  });
});

describe('slack approvals over HTTP interactivity (signed block_actions on /slack/events)', () => {
  let stack: Stack;
  let slack: FakeSlack;

  beforeAll(async () => {
    slack = await startFakeSlack();
    stack = await startStack('slack-approvals', {
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      TOOLS_APPROVE: 'edit_file',
      APPROVERS: `slack:${BOSS.id}`,
      APPROVAL_BY: 'either',
    });
    await waitFor('slack identity', async () => (await (await readyz(stack)).json()).channels?.slack?.connected === true);
    scriptModel(stack);
  });
  afterAll(async () => {
    await stack?.close();
    await slack?.close();
  });

  it('approve: the card in the thread; a stranger is refused privately; the requester’s click runs the edit once and the card shows the decision; a second click is told', async () => {
    const ts = nextTs();
    const log = await workspaceFile(stack, ts);
    expect((await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'append a line to log.txt')))).status).toBe(200);
    const card = await cardIn(slack, ts);

    expect(card).toMatchObject({ channel: CHANNEL, thread_ts: ts });
    expect(blockTypes(card)).toEqual(['section', 'context', 'actions']);
    expect(card.blocks![0]!.text.text).toBe(`*Call edit_file with these arguments?*\n\`\`\`\n${JSON.stringify(JSON.parse(EDIT.arguments), null, 2)}\n\`\`\``);
    expect(card.blocks![1]!.elements[0].text).toMatch(/^Asked by <@U0ADA>\. Waits until \d\d:\d\d UTC; no answer counts as deny\.$/);
    const buttons = buttonsOf(card);
    expect(buttons.map((b) => [b.text, b.action_id, b.style])).toEqual([
      ['Approve', 'sb_approve', 'primary'],
      ['Deny', 'sb_deny', 'danger'],
    ]);
    expect(buttons[0]!.value).toMatch(/^ap:[A-Za-z0-9_-]{12}$/);
    expect(buttons[1]!.value).toBe(buttons[0]!.value);
    expect(card.text).toContain('Call edit_file with these arguments?');
    expect(stack.fake.requests).toHaveLength(1);

    // A forged signature is refused and decides nothing.
    const body = new URLSearchParams({ payload: JSON.stringify(blockActions(card, ADA, 'Approve')) }).toString();
    const forged = await fetch(`${stack.baseUrl}/slack/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...signed(body, undefined, 'not-the-secret') },
      body,
    });
    expect(forged.status).toBe(401);

    // A stranger: a private refusal in the thread; the run stays parked.
    const stranger = await postInteraction(stack.baseUrl, blockActions(card, BOB, 'Approve'));
    expect(stranger.status).toBe(200);
    expect(await ephemeralTo(slack, BOB.id, 1)).toMatchObject({
      channel: CHANNEL,
      thread_ts: ts,
      text: 'Only the person who asked, or an approver, can decide this.',
    });
    expect(await log()).toBe('END');
    await waitFor('the job parked', async () => (await stack.queue.getJobCounts('delayed')).delayed === 1);
    expect(await stack.queue.getJobCounts('active', 'waiting')).toEqual({ active: 0, waiting: 0 });
    expect(card.edits).toEqual([]);

    // A button whose approval does not exist.
    await postInteraction(stack.baseUrl, blockActions(card, ADA, { action_id: 'sb_approve', value: 'ap:nosuchapproval' }));
    expect((await ephemeralTo(slack, ADA.id, 1)).text).toBe('This request is no longer waiting for a decision.');

    // The requester: no extra message; the edit runs once, the answer comes in the thread, the card is updated once.
    const approve = await postInteraction(stack.baseUrl, blockActions(card, ADA, 'Approve'));
    expect(approve.status).toBe(200);
    expect(await approve.text()).toBe('');
    const answer = await resultIn(slack, ts);
    expect(answer.text).toMatch(/^result: Edited log\.txt/);
    expect(await log()).toBe('line-1\nEND');
    await waitFor('the job', async () => (await stack.queue.getJobCounts('completed')).completed === 1);
    expect(slack.messages.filter((m) => m.text.startsWith('result:'))).toHaveLength(1);
    expect(stack.fake.requests).toHaveLength(2);
    expect(card.edits).toHaveLength(1);
    expect(blockTypes(card)).toEqual(['section', 'context', 'section']);
    expect(card.blocks![0]).toEqual(JSON.parse(card.params.blocks)[0]);
    expect(card.blocks![2]!.text.text).toMatch(/^✅ Approved by @ada at \d\d:\d\d UTC$/);
    expect(card.text).toMatch(/✅ Approved by @ada/);
    expect(slack.ephemerals.filter((e) => e.user === ADA.id)).toHaveLength(1);

    // A second click (a stale card, or a double click): told privately, nothing changes.
    await postInteraction(stack.baseUrl, blockActions(card, ADA, 'Deny'));
    expect(await ephemeralTo(slack, ADA.id, 2)).toMatchObject({ channel: CHANNEL, thread_ts: ts, text: 'Already decided: approved by @ada.' });
    expect(card.edits).toHaveLength(1);
    expect(stack.fake.requests).toHaveLength(2);
  }, 30_000);

  it('deny by an approver: the edit does not run and the model reads who denied it', async () => {
    const ts = nextTs();
    const log = await workspaceFile(stack, ts);
    await postEvent(stack.baseUrl, eventCallback(appMention(CHANNEL, ts, 'append a line to log.txt')));
    const card = await cardIn(slack, ts);
    expect((await postInteraction(stack.baseUrl, blockActions(card, BOSS, 'Deny'))).status).toBe(200);
    const answer = await resultIn(slack, ts);
    expect(answer.text).toBe('result: Error: not run: edit_file was denied by @boss. Do not retry it; answer without it or ask the user.');
    expect(await log()).toBe('END');
    await waitFor('the card decided', () => card.edits.length === 1);
    expect(blockTypes(card)).toEqual(['section', 'context', 'section']);
    expect(card.blocks![2]!.text.text).toMatch(/^❌ Denied by @boss at \d\d:\d\d UTC$/);
    expect(slack.ephemerals.filter((e) => e.user === BOSS.id)).toEqual([]);
  }, 30_000);
});

describe('slack approvals over Socket Mode (interactive envelopes)', () => {
  let stack: Stack;
  let slack: FakeSlack;
  beforeAll(async () => {
    slack = await startFakeSlack();
    stack = await startStack('slack-approvals-socket', {
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_APP_TOKEN: APP_TOKEN,
      SLACK_API_URL: slack.apiUrl,
      TOOLS_APPROVE: 'edit_file',
    });
    await waitFor('socket mode connected', async () => (await (await readyz(stack)).json()).channels?.slack?.connected === true);
    scriptModel(stack);
  });
  afterAll(async () => {
    await stack?.close();
    await slack?.close();
  });

  it('a click over the socket is acked and decides; a stranger is answered privately', async () => {
    const ts = nextTs();
    const log = await workspaceFile(stack, ts);
    slack.socket.send(eventCallback(appMention(CHANNEL, ts, 'append a line to log.txt')));
    const card = await cardIn(slack, ts);

    const refused = slack.socket.send(blockActions(card, BOB, 'Approve'), 'interactive');
    await waitFor('the ack', () => slack.socket.acks.some((a) => a.envelope_id === refused));
    expect((await ephemeralTo(slack, BOB.id, 1)).text).toBe('Only the person who asked, or an approver, can decide this.');

    const approved = slack.socket.send(blockActions(card, ADA, 'Approve'), 'interactive');
    await waitFor('the ack', () => slack.socket.acks.some((a) => a.envelope_id === approved));
    expect((await resultIn(slack, ts)).text).toMatch(/^result: Edited log\.txt/);
    expect(await log()).toBe('line-1\nEND');
    await waitFor('the card decided', () => card.edits.length === 1);
    expect(card.blocks![2]!.text.text).toMatch(/^✅ Approved by @ada/);
    expect(slack.ephemerals.filter((e) => e.user === ADA.id)).toEqual([]);
  }, 30_000);
});
