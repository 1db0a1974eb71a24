import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { cardButtons, cardText, decidedText } from '../../../src/channels/discord/approval-card.js';
import { approvalCustomId, parseApprovalCustomId } from '../../../src/channels/discord/approval-data.js';
import { refusalText as buttonAnswer } from '../../../src/channels/kit/approval-card.js';
import { DiscordOutbound } from '../../../src/channels/discord/outbound.js';
import type { ApprovalRecord } from '../../../src/approvals/desk.js';
import { DiscordApiError } from '../../../src/channels/discord/errors.js';
import { DiscordRest } from '../../../src/channels/discord/rest.js';
import type { InboundMessage } from '../../../src/channels/types.js';
import { createLogger } from '../../../src/log.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { workspaceFolderName } from '../../../src/tools/workspace.js';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction, type FakeMessage } from '../../fakes/discord-server.js';
import { waitFor } from '../../helpers/processes.js';
import { startStack, type Stack } from '../../helpers/stack.js';

const APPEND = { name: 'edit_file', arguments: JSON.stringify({ path: 'log.txt', old_text: 'END', new_text: 'line-1\nEND' }) };
/** The call as the card shows it: the arguments exactly as sent, pretty-printed, in a code block. */
const SHOWN = '```\n{\n  "path": "log.txt",\n  "old_text": "END",\n  "new_text": "line-1\\nEND"\n}\n```';

describe('Discord approval cards: the button ids and the text', () => {
  it('the custom_id carries the approval id and the decision, within 100 characters, and nothing else parses', () => {
    const id = 'AbC-_12345xyz';
    for (const decision of ['approved', 'denied'] as const) {
      const customId = approvalCustomId(id, decision);
      expect(customId.length).toBeLessThanOrEqual(100);
      expect(parseApprovalCustomId(customId)).toEqual({ id, decision });
    }
    expect(approvalCustomId(id, 'approved')).toBe('sb:approval:AbC-_12345xyz:approve');
    for (const bad of ['', 'ap:AbC:y', 'sb:approval:AbC:maybe', 'sb:approval::approve', 'sb:approval:a b:deny', `sb:approval:${'x'.repeat(41)}:deny`]) {
      expect(parseApprovalCustomId(bad)).toBeNull();
    }
    const [row] = cardButtons(id);
    expect(row!.components.map((b) => [b.label, b.style])).toEqual([
      ['Approve', 3],
      ['Deny', 4],
    ]);
  });

  it('a press that decides nothing is told why: a stranger, a second press, an expired or stopped request, an unknown id', () => {
    const record = (status: ApprovalRecord['status'], by?: string): ApprovalRecord => ({
      id: 'a',
      session: 's',
      jobId: '1',
      step: 1,
      callId: 'c',
      tool: 't',
      argsHash: '',
      args: '{}',
      platform: 'discord',
      conversation: 'c1',
      requester: '1',
      expiresAt: 0,
      status,
      ...(by && { by }),
    });
    expect(buttonAnswer({ kind: 'not_allowed', record: record('pending') })).toBe('Only the person who asked, or an approver, can decide this.');
    expect(buttonAnswer({ kind: 'already', record: record('denied', 'bob') })).toBe('Already decided: denied by bob.');
    expect(buttonAnswer({ kind: 'already', record: record('expired', 'expiry') })).toBe('Already decided: nobody decided in time, so it counted as a deny.');
    expect(buttonAnswer({ kind: 'already', record: record('cancelled', 'stop') })).toBe('Already decided: the run was stopped.');
    expect(buttonAnswer({ kind: 'unknown' })).toBe('This request is no longer waiting for a decision.');
  });

  it('a huge call is clipped so the card and the decided card stay under 2,000 characters; a fence in the arguments cannot end the block', () => {
    const card = {
      id: 'x',
      tool: 'write_file',
      args: JSON.stringify({ path: 'a.md', content: `\`\`\`\n${'y'.repeat(5_000)}` }),
      requester: 'Alice',
      expiresAt: Date.UTC(2030, 0, 1, 12, 34),
    };
    const text = cardText(card);
    const decided = decidedText(card, { decision: 'approved', by: 'a'.repeat(40), at: Date.now() });
    expect(text.length).toBeLessThanOrEqual(2_000);
    expect(decided.length).toBeLessThanOrEqual(2_000);
    expect(decided.startsWith(text)).toBe(true);
    expect(text).toMatch(/\n… \(\d+ more characters\)\n```\nAsked by Alice\. Waits until 12:34 UTC; no answer counts as deny\.$/);
    expect(text.match(/```/g)).toHaveLength(2);
    const command = cardText({ ...card, tool: 'run_command', args: JSON.stringify({ command: 'rm -rf build' }) });
    expect(command.startsWith('**Run this command in the workspace?**\n```\nrm -rf build\n```\n')).toBe(true);
  });
});

describe('Discord approval cards: DiscordOutbound against the fake', () => {
  let fake: FakeDiscord;
  beforeAll(async () => {
    fake = await startFakeDiscord();
  });
  afterAll(async () => {
    await fake?.close();
  });
  const rest = () => new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl, retry: { sleep: async () => undefined } });
  const card = { id: 'card-1', tool: 'edit_file', args: APPEND.arguments, requester: 'Alice', expiresAt: Date.now() + 60_000 };

  it('a card whose response was lost is sent again with the same nonce and makes one message; a deleted card is left alone', async () => {
    const out = new DiscordOutbound({ rest: rest(), log: createLogger('silent'), downloadHosts: [] });
    const asked = fake.userMessage({ channel: fake.ids.general, content: `<@${fake.ids.app}> append` });
    const to: InboundMessage = {
      v: 1,
      id: `discord-${asked.id}`,
      platform: 'discord',
      conversation: fake.ids.general,
      sender: { id: fake.ids.alice, name: 'Alice' },
      text: 'append',
      attachments: [],
      eventId: asked.id,
      receivedAt: Date.now(),
      replyTo: asked.id,
    };
    fake.fail({ method: 'POST', path: /^\/channels\/\d+\/messages$/, status: 500, afterWork: true });
    const id = await out.approvalCard(to, card);
    const posts = fake.calls('POST', /^\/channels\/\d+\/messages$/);
    expect(posts.map((p) => p.status)).toEqual([500, 200]);
    expect(posts[1]!.body.nonce).toBe(posts[0]!.body.nonce);
    expect(
      fake
        .botMessages(fake.ids.general)
        .filter((m) => m.components.length > 0)
        .map((m) => m.id),
    ).toEqual([id]);

    await out.approvalDecided(to, id, card, { decision: 'expired', by: 'expiry', at: Date.now() });
    expect(fake.messages.find((m) => m.id === id)).toMatchObject({
      components: [],
      content: expect.stringMatching(/\n\n\*\*⌛ Expired at \d\d:\d\d UTC: nobody approved it \(counts as deny\)\*\*$/),
    });
    await rest().request('DELETE', `/channels/${fake.ids.general}/messages/${id}`);
    await expect(out.approvalDecided(to, id, card, { decision: 'cancelled', by: 'stop', at: Date.now() })).resolves.toBeUndefined();
  });

  it('the fake refuses buttons Discord refuses: a duplicate custom_id, one over 100 characters', async () => {
    const row = (ids: string[]) => [{ type: 1, components: ids.map((custom_id) => ({ type: 2, style: 1, label: 'x', custom_id })) }];
    for (const components of [row(['same', 'same']), row(['x'.repeat(101)])]) {
      const err = await rest()
        .request('POST', `/channels/${fake.ids.general}/messages`, { body: { content: 'hi', components } })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DiscordApiError);
      expect((err as DiscordApiError).code).toBe(50035);
    }
  });
});

describe('Discord approval cards: the real discord.js client against the fake Discord', () => {
  let fake: FakeDiscord;
  let stack: Stack;

  beforeAll(async () => {
    fake = await startFakeDiscord();
    stack = await startStack('dc-approvals', fake.env({ TOOLS_APPROVE: 'edit_file' }));
    const channel = stack.gateway.channels.find((c) => c.name === 'discord')!;
    await waitFor('the Discord gateway to be ready', () => channel.health().connected, 15_000);
    stack.fake.setHandler((req) => {
      const messages = req.body.messages as ChatMessage[];
      const tool = [...messages].reverse().find((m) => m.role === 'tool');
      const lastUser = [...messages].reverse().findIndex((m) => m.role === 'user');
      const lastTool = [...messages].reverse().findIndex((m) => m.role === 'tool');
      return tool && lastTool < lastUser ? { content: `result: ${String(tool.content)}` } : { content: 'I will append the line.', toolCalls: [APPEND] };
    });
  }, 30_000);
  afterAll(async () => {
    await stack?.close();
    await fake?.close();
  });

  async function workspace(channelId: string): Promise<() => Promise<string>> {
    const ws = join(stack.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'discord', conversation: channelId })));
    await mkdir(ws, { recursive: true });
    await writeFile(join(ws, 'log.txt'), 'END');
    return () => readFile(join(ws, 'log.txt'), 'utf8');
  }

  const cardIn = (channelId: string) => waitFor('the approval card', () => fake.botMessages(channelId).find((m) => m.components.length > 0), 15_000);
  const answered = (ix: FakeInteraction) => waitFor('the interaction response', () => (ix.callbackType !== undefined ? ix : undefined), 5_000);
  const buttonsOf = (card: FakeMessage) => {
    const [approve, deny] = fake.buttons(card).map((b) => b.custom_id!);
    return { approve: approve!, deny: deny! };
  };
  const results = (channelId: string) => fake.botMessages(channelId).filter((m) => m.content.startsWith('result:'));
  const modelCalls = () => stack.fake.requests.length;

  it("approve: the card shows the exact call; a stranger is refused privately; the requester's press updates the card in place, runs the edit once, answers once", async () => {
    const channel = fake.ids.general;
    const log = await workspace(channel);
    const asked = fake.userMessage({ channel, content: `<@${fake.ids.app}> append a line to log.txt` });
    const card = await cardIn(channel);

    expect(card.content.startsWith(`**Call edit_file with these arguments?**\n${SHOWN}\nAsked by Alice. Waits until `)).toBe(true);
    expect(card).toMatchObject({ via: 'channel', message_reference: { message_id: asked.id }, pings: [] });
    expect(card.components).toEqual([
      {
        type: 1,
        components: [
          { type: 2, style: 3, label: 'Approve', custom_id: expect.stringMatching(/^sb:approval:[\w-]+:approve$/) },
          { type: 2, style: 4, label: 'Deny', custom_id: expect.stringMatching(/^sb:approval:[\w-]+:deny$/) },
        ],
      },
    ]);
    const { approve, deny } = buttonsOf(card);
    expect(parseApprovalCustomId(deny)!.id).toBe(parseApprovalCustomId(approve)!.id);
    const [post] = fake.calls('POST', new RegExp(`^/channels/${channel}/messages$`)).filter((r) => r.body.components);
    expect(post!.body).toMatchObject({
      enforce_nonce: true,
      nonce: expect.stringMatching(/^[\w-]{25}$/),
      allowed_mentions: { parse: [], replied_user: false },
    });
    const callsBefore = modelCalls();

    // Bob did not ask and is no approver.
    const stranger = await answered(fake.press({ message: card, customId: approve, user: fake.ids.bob }));
    expect(stranger).toMatchObject({ callbackType: 4, callbackFlags: 64 | 4, callbackContent: 'Only the person who asked, or an approver, can decide this.' });
    await new Promise((r) => setTimeout(r, 300));
    expect(await log()).toBe('END');
    expect(card.history).toHaveLength(1);
    expect(fake.buttons(card)).toHaveLength(2);
    expect(modelCalls()).toBe(callsBefore);

    const press = await answered(fake.press({ message: card, customId: approve }));
    expect(press.callbackType).toBe(7);
    expect(press.callbackAt! - press.createdAt).toBeLessThan(3_000);
    expect(press.callbackData).toMatchObject({ components: [], allowed_mentions: { parse: [] } });
    expect(press.callbackContent).toMatch(/^\*\*Call edit_file with these arguments\?\*\*\n[\s\S]*\n\n\*\*✅ Approved by alice at \d\d:\d\d UTC\*\*$/);
    await waitFor('the answer', () => results(channel)[0], 15_000);
    await waitFor('the completed job', async () => (await stack.queue.getJobs(['completed'])).find((j) => j.data.session === `discord:${channel}`), 10_000);

    expect(await log()).toBe('line-1\nEND');
    expect(results(channel).map((m) => m.content)).toEqual([expect.stringMatching(/^result: Edited log\.txt/)]);
    expect(results(channel)[0]!.message_reference).toEqual({ message_id: asked.id, channel_id: channel });
    // The click's update and the resumed run's edit agree: the decided text, no buttons.
    expect(card.components).toEqual([]);
    expect(card.content).toBe(press.callbackContent);
    expect(card.content.startsWith(card.history[0]!)).toBe(true);
    const edits = fake.calls('PATCH', new RegExp(`^/channels/${channel}/messages/${card.id}$`));
    expect(edits.map((e) => [e.status, e.body.components, e.body.content])).toEqual([[200, [], press.callbackContent]]);
    expect(card.history.slice(1)).toEqual([press.callbackContent, press.callbackContent]);

    // A late press (a client that still shows the buttons): told privately, nothing changes.
    const again = await answered(fake.press({ message: card, customId: deny }));
    expect(again).toMatchObject({ callbackType: 4, callbackFlags: 64 | 4, callbackContent: 'Already decided: approved by alice.' });
    expect(card.history).toHaveLength(3);
    expect(results(channel)).toHaveLength(1);
  }, 40_000);

  it('deny in a DM: the card is a reply there, the call does not run, and the model reads who denied it', async () => {
    const channel = fake.ids.dmAlice;
    const log = await workspace(channel);
    const asked = fake.userMessage({ channel, content: 'append a line to log.txt' });
    const card = await cardIn(channel);
    expect(card).toMatchObject({ message_reference: { message_id: asked.id }, pings: [] });
    expect(card.content).toContain(SHOWN);

    const press = await answered(fake.press({ message: card, customId: buttonsOf(card).deny }));
    expect(press).toMatchObject({ callbackType: 7, callbackData: { components: [] } });
    expect(press.callbackContent).toMatch(/\n\n\*\*❌ Denied by alice at \d\d:\d\d UTC\*\*$/);
    const [answer] = await waitFor('the answer', () => (results(channel).length ? results(channel) : undefined), 15_000);
    expect(answer!.content).toBe('result: Error: not run: edit_file was denied by alice. Do not retry it; answer without it or ask the user.');
    expect(await log()).toBe('END');
    await waitFor('the decided card', () => card.history.length === 3, 5_000);
    expect(card).toMatchObject({ content: press.callbackContent, components: [] });
  }, 40_000);

  it("/ask: the card is a message in the command's channel; once approved, the answer replaces the deferred response", async () => {
    const channel = fake.ids.random;
    const log = await workspace(channel);
    const ix = fake.slash({ name: 'ask', channel, prompt: 'append a line to log.txt' });
    const card = await cardIn(channel);
    expect(card.via).toBe('channel');
    expect(card.message_reference).toBeUndefined();
    expect(card.pings).toEqual([]);
    expect(ix.callbackType).toBe(5);

    const press = await answered(fake.press({ message: card, customId: buttonsOf(card).approve }));
    expect(press.callbackType).toBe(7);
    await waitFor('the answer', () => fake.messages.find((m) => m.id === ix.originalId)?.content.startsWith('result:'), 15_000);
    expect(fake.messages.find((m) => m.id === ix.originalId)!.content).toMatch(/^result: Edited log\.txt/);
    expect(await log()).toBe('line-1\nEND');
    expect(results(channel).map((m) => m.id)).toEqual([ix.originalId]);
    await waitFor('the decided card', () => card.history.length === 3, 5_000);
    expect(card.components).toEqual([]);
  }, 40_000);
});
