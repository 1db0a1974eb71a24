import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FOLDED_NOTE } from '../../../src/channels/discord/outbound.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';
import { workspaceFolderName } from '../../../src/tools/workspace.js';
import type { ChatMessage } from '../../../src/agent/types.js';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction, type FakeMessage } from '../../fakes/discord-server.js';
import { waitFor } from '../../helpers/processes.js';
import { startStack, type Stack } from '../../helpers/stack.js';
import { PLACEHOLDER } from '../../../src/channels/kit/pieces.js';

/**
 * The real discord.js client against the fake Discord, the real gateway and worker roles, real
 * Redis and the fake model: a Discord user's request all the way to its answer.
 */

interface World {
  fake: FakeDiscord;
  stack: Stack;
}

let world: World | undefined;
afterEach(async () => {
  await world?.stack.close();
  await world?.fake.close();
  world = undefined;
});

async function start(name: string, env: Record<string, string> = {}): Promise<World> {
  const fake = await startFakeDiscord();
  const stack = await startStack(name, fake.env(env));
  world = { fake, stack };
  const channel = stack.gateway.channels.find((c) => c.name === 'discord')!;
  await waitFor('the Discord gateway to be ready', () => channel.health().connected, 15_000);
  return world;
}

const userTexts = (body: { messages: ChatMessage[] }) => body.messages.filter((m) => m.role === 'user').map((m) => String(m.content));
const fences = (text: string) => (text.match(/^```/gm) ?? []).length;

function longAnswer(): string {
  const code = Array.from({ length: 60 }, (_, i) => `print("line ${i}")  # ${'='.repeat(20)}`).join('\n');
  return `Here is the script.\n\n\`\`\`python\n${code}\n\`\`\`\n\n${'That is all it does. '.repeat(90)}`.trim();
}

function original(fake: FakeDiscord, ix: FakeInteraction): FakeMessage | undefined {
  return ix.originalId ? fake.messages.find((m) => m.id === ix.originalId) : undefined;
}

describe('Discord: slash commands', () => {
  it('/ask is deferred before the slow model answers, its response shows progress, then the answer replaces it', async () => {
    const { fake, stack } = await start('dc-ask');
    let deferredBeforeModel: boolean | undefined;
    let ix: FakeInteraction | undefined;
    stack.fake.setHandler((req) => {
      if (req.body.messages.length === 2) {
        deferredBeforeModel = ix?.callbackType === 5;
        return { content: 'Let me look at the workspace.', toolCalls: [{ name: 'list_files', arguments: '{}' }], delayMs: 200 };
      }
      return { content: 'The workspace is **empty**.', delayMs: 1_500 };
    });
    ix = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'what files are there?' });
    await waitFor('the answer', () => original(fake, ix!)?.content === 'The workspace is **empty**.', 20_000);

    expect(deferredBeforeModel).toBe(true);
    expect(ix.callbackType).toBe(5);
    expect(ix.callbackFlags).toBe(0);
    const history = original(fake, ix)!.history;
    expect(history[0]).toBe(''); // the deferred "is thinking…" response
    expect(history.some((h) => h.startsWith('Let me look at the workspace.'))).toBe(true);
    expect(history.at(-1)).toBe('The workspace is **empty**.');
    expect(history.indexOf('The workspace is **empty**.')).toBe(history.length - 1);
    // Everything went through the interaction: no channel message, no typing, no follow-up.
    expect(fake.calls('POST', /^\/channels\//)).toEqual([]);
    expect(ix.followups).toEqual([]);
    expect(userTexts(stack.fake.requests[0]!.body)).toEqual(['what files are there?']);
    const job = await waitFor('the completed job', async () => (await stack.queue.getJobs(['completed'])).at(0));
    expect(job!.data.session).toBe(`discord:${fake.ids.general}`);
    // The interaction token rides with the message for the reply, but the dashboard never shows it.
    expect(job!.data.messages?.[0]?.meta?.interactionToken).toBe('[redacted]');
    expect(JSON.stringify(job!.data)).not.toContain(ix.token);
    expect(JSON.stringify(await stack.redis.get(`${stack.config.queue.prefix}:run:${job!.data.runId}`))).not.toContain(ix.token);
  }, 40_000);

  it('a 4,500-character answer arrives as the response plus ordered follow-ups, each under 2,000 with balanced fences', async () => {
    const { fake, stack } = await start('dc-long');
    const answer = longAnswer();
    expect(answer.length).toBeGreaterThan(4_000);
    stack.fake.script([{ content: answer }]);
    const ix = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'write the script' });
    // A follow-up is posted as a placeholder (it takes no nonce) and edited into its piece.
    const followUps = () => ix.followups.map((id) => fake.messages.find((m) => m.id === id)!);
    await waitFor(
      'the follow-ups',
      () => ix.followups.length === 2 && followUps().every((m) => m.content !== PLACEHOLDER) && (original(fake, ix)?.history.length ?? 0) > 1,
      20_000,
    );

    const pieces = [original(fake, ix)!, ...followUps()];
    expect(pieces.map((p) => p.content.length).every((n) => n <= 2000)).toBe(true);
    expect(pieces.map((p) => fences(p.content) % 2)).toEqual([0, 0, 0]);
    expect(pieces[0]!.content.startsWith('Here is the script.')).toBe(true);
    expect(pieces[1]!.content.startsWith('```python\n')).toBe(true);
    expect(pieces[2]!.content.endsWith('That is all it does.')).toBe(true);
    // Sent in order: each follow-up's placeholder after the one before, each edited into its piece.
    expect(fake.calls('POST', /^\/webhooks\/\d+\/[^/]+$/).map((r) => r.body.content)).toEqual([PLACEHOLDER, PLACEHOLDER]);
    const fills = fake.calls('PATCH', /^\/webhooks\/\d+\/[^/]+\/messages\/\d+$/);
    expect(fills.map((r) => r.body.content)).toEqual([pieces[1]!.content, pieces[2]!.content]);
    expect(BigInt(ix.followups[0]!) < BigInt(ix.followups[1]!)).toBe(true);
  }, 40_000);

  it('/stop cancels the running /ask: an ephemeral "Stopping", then the run ends with an ephemeral "Stopped."', async () => {
    const { fake, stack } = await start('dc-stop');
    stack.fake.setHandler(() => ({ content: 'too late', delayMs: 20_000 }));
    const ask = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'think for a long time' });
    await waitFor('the model call', () => stack.fake.requests.length === 1, 15_000);
    const stop = fake.slash({ name: 'stop', channel: fake.ids.general });
    await waitFor('the stop reply', () => stop.callbackType !== undefined);
    expect(stop).toMatchObject({ callbackType: 4, callbackFlags: 64 | 4, callbackContent: 'Stopping the current run…' });

    await waitFor(
      'the ephemeral failure line',
      () => ask.followups.length === 1 && fake.messages.find((m) => m.id === ask.followups[0])?.content !== PLACEHOLDER,
      15_000,
    );
    expect(fake.messages.find((m) => m.id === ask.followups[0])).toMatchObject({ content: 'Stopped.', flags: 64 });
    await waitFor('the deferred response removed', () => fake.messages.find((m) => m.id === ask.originalId)?.deleted, 5_000);
    expect(fake.calls('DELETE', /@original$/).map((r) => r.status)).toEqual([204]);
    const failed = await waitFor('the failed job', async () => (await stack.queue.getJobs(['failed'])).at(0));
    expect(failed!.failedReason).toMatch(/^cancelled/);
    expect(await stack.queue.getJobCounts('completed')).toEqual({ completed: 0 });
  }, 40_000);

  it('a run that outlives the interaction token (webhook 401) still delivers its answer, once, in the channel', async () => {
    const { fake, stack } = await start('dc-expired');
    let ix: FakeInteraction | undefined;
    stack.fake.setHandler(async (req) => {
      if (req.body.messages.length === 2) return { content: 'Working on it.', toolCalls: [{ name: 'list_files', arguments: '{}' }] };
      // The progress edit lands first (it is asynchronous: under load it can trail the tool), then
      // the 15 minutes pass while the model thinks.
      await waitFor('the progress edit', () => original(fake, ix!)?.content.startsWith('Working on it.'), 10_000);
      fake.expire(ix!.id);
      return { content: 'Here is your late answer.', delayMs: 300 };
    });
    ix = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'slow job' });
    await waitFor(
      'the answer in the channel',
      () => fake.botMessages(fake.ids.general).find((m) => m.via === 'channel' && m.content.includes('late answer')),
      20_000,
    );

    const answers = fake.messages.filter((m) => m.content.includes('Here is your late answer.'));
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ via: 'channel', content: `<@${fake.ids.alice}>\nHere is your late answer.`, pings: [`user:${fake.ids.alice}`] });
    expect(answers[0]!.message_reference).toBeUndefined();
    // The webhook refused the answer: the deferred response still shows progress, not the answer.
    expect(original(fake, ix)!.content.startsWith('Working on it.')).toBe(true);
    expect(fake.calls('PATCH', /@original$/).some((r) => r.status === 401)).toBe(true);
    const job = await waitFor('the completed job', async () => (await stack.queue.getJobs(['completed'])).at(0));
    expect(job!.returnvalue.delivered).toEqual([answers[0]!.id]);
  }, 40_000);

  it('a 429 on an edit of the response is honoured (status and answer), and the answer arrives once', async () => {
    const { fake, stack } = await start('dc-429');
    // The first edit of the deferred response (the status) meets a 429, and so does the answer's
    // edit, told apart by its content: a later status edit (the tool's line) cannot take its place.
    fake.fail({ method: 'PATCH', path: /@original$/, status: 429, retryAfter: 0.3 });
    fake.fail({ method: 'PATCH', path: /@original$/, status: 429, retryAfter: 0.3, when: (r) => r.body?.content === 'All checked.' });
    let ix: FakeInteraction | undefined;
    stack.fake.setHandler(async (req) => {
      if (req.body.messages.length === 2) return { content: 'Checking.', toolCalls: [{ name: 'list_files', arguments: '{}' }] };
      // The model answers once the status edit has got through its 429. That edit shows the
      // narration, with the tool's line too when the tool ended before the first edit went out.
      await waitFor('the status edit', () => original(fake, ix!)?.history.some((h) => h.startsWith('Checking.')), 10_000);
      return { content: 'All checked.', delayMs: 100 };
    });
    ix = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'check' });
    await waitFor('the answer', () => original(fake, ix!)?.content === 'All checked.', 20_000);
    await waitFor('the completed job', async () => (await stack.queue.getJobs(['completed'])).at(0));

    const patches = fake.calls('PATCH', /@original$/);
    const limited = patches.filter((p) => p.status === 429);
    expect(limited.map((l) => l.body.content)).toEqual([expect.stringMatching(/^Checking\.(\n• list_files\b.*)?$/), 'All checked.']);
    for (const l of limited) {
      const retry = patches.find((p) => p.seq > l.seq && p.body.content === l.body.content)!;
      expect(retry.status).toBe(200);
      expect(retry.at - l.at).toBeGreaterThanOrEqual(290);
    }
    expect(fake.messages.filter((m) => m.content === 'All checked.')).toHaveLength(1);
    const history = original(fake, ix)!.history;
    expect(history.filter((h) => h === 'All checked.')).toHaveLength(1);
    expect(history[1]).toBe(limited[0]!.body.content);
    expect(history.at(-1)).toBe('All checked.');
  }, 40_000);

  it('/status and /help answer at once, ephemerally; /reset is queued and answered in place', async () => {
    const { fake, stack } = await start('dc-cmds');
    stack.fake.setHandler((req) => ({ content: `ok ${userTexts(req.body).length}` }));
    const first = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'remember: blue' });
    await waitFor('the first answer', () => original(fake, first)?.content === 'ok 1', 15_000);
    const status = fake.slash({ name: 'status', channel: fake.ids.general });
    const help = fake.slash({ name: 'help', channel: fake.ids.general });
    await waitFor('the replies', () => status.callbackType !== undefined && help.callbackType !== undefined);
    expect(status).toMatchObject({ callbackType: 4, callbackFlags: 64 | 4 });
    expect(status.callbackContent).toMatch(/^No run is active\. Last run: completed, \d+ s ago\.$/);
    expect(help.callbackContent).toContain('/reset — forget this conversation and start fresh');

    const reset = fake.slash({ name: 'reset', channel: fake.ids.general });
    await waitFor('the reset answer', () => original(fake, reset)?.content.startsWith('Fresh start'), 15_000);
    expect(reset.callbackType).toBe(5);
    const after = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'what colour?' });
    await waitFor('the answer after reset', () => original(fake, after)?.content.startsWith('ok'), 15_000);
    expect(userTexts(stack.fake.requests.at(-1)!.body)).toEqual(['what colour?']);
    expect(stack.fake.requests).toHaveLength(2);
  }, 40_000);
});

describe('Discord: mentions and DMs', () => {
  it('a mention gets one reply (typing meanwhile), a message without a mention gets none, and @everyone in the answer pings no one', async () => {
    const { fake, stack } = await start('dc-mention');
    stack.fake.setHandler((req) => ({ content: `Hi @everyone and @here, you said: ${userTexts(req.body).at(-1)}`, delayMs: 300 }));
    fake.userMessage({ channel: fake.ids.general, content: 'just talking among ourselves' });
    const asked = fake.userMessage({ channel: fake.ids.general, content: `<@${fake.ids.app}> summarise today` });
    await waitFor('the reply', () => fake.botMessages(fake.ids.general).length === 1, 15_000);
    await waitFor('the completed job', async () => (await stack.queue.getJobs(['completed'])).at(0));

    const [reply] = fake.botMessages(fake.ids.general);
    expect(reply).toMatchObject({ content: 'Hi @everyone and @here, you said: summarise today', message_reference: { message_id: asked.id } });
    expect(reply!.pings).toEqual([`replied:${fake.ids.alice}`]);
    expect(stack.fake.requests).toHaveLength(1);
    const typing = fake.calls('POST', /\/typing$/);
    const post = fake.calls('POST', /\/messages$/).at(-1)!;
    expect(typing.length).toBeGreaterThanOrEqual(1);
    expect(typing[0]!.seq).toBeLessThan(post.seq);
    expect(typing[0]!.path).toBe(`/channels/${fake.ids.general}/typing`);
  }, 40_000);

  it('a DM gets one reply without a mention; its session is the DM', async () => {
    const { fake, stack } = await start('dc-dm');
    stack.fake.script([{ content: 'Hello Alice.' }]);
    const dm = fake.userMessage({ channel: fake.ids.dmAlice, content: 'hello?' });
    await waitFor('the DM reply', () => fake.botMessages(fake.ids.dmAlice).length === 1, 15_000);
    expect(fake.botMessages(fake.ids.dmAlice)[0]).toMatchObject({ content: 'Hello Alice.', message_reference: { message_id: dm.id } });
    const job = await waitFor('the completed job', async () => (await stack.queue.getJobs(['completed'])).at(0));
    expect(job!.data.session).toBe(`discord:${fake.ids.dmAlice}`);
    // A chat command typed as text is answered at once, as a reply, without a run.
    const status = fake.userMessage({ channel: fake.ids.dmAlice, content: '/status' });
    await waitFor('the /status reply', () => fake.botMessages(fake.ids.dmAlice).length === 2, 15_000);
    expect(fake.botMessages(fake.ids.dmAlice)[1]!.content).toMatch(/^No run is active\. Last run: completed/);
    expect(fake.botMessages(fake.ids.dmAlice)[1]!.message_reference?.message_id).toBe(status.id);
    expect(stack.fake.requests).toHaveLength(1);
  }, 40_000);

  it("the bot's own and other bots' messages start nothing; a reply to the bot does", async () => {
    const { fake, stack } = await start('dc-bots');
    stack.fake.setHandler((req) => ({ content: `answer to ${userTexts(req.body).at(-1)}` }));
    fake.userMessage({ channel: fake.ids.general, author: fake.ids.otherBot, content: `<@${fake.ids.app}> bots talking` });
    const first = fake.userMessage({ channel: fake.ids.general, content: `<@${fake.ids.app}> first` });
    await waitFor('the first reply', () => fake.botMessages(fake.ids.general).length === 1, 15_000);
    const [mine] = fake.botMessages(fake.ids.general);
    expect(mine!.message_reference?.message_id).toBe(first.id);
    fake.userMessage({ channel: fake.ids.general, author: fake.ids.app, content: `<@${fake.ids.app}> talking to myself` });
    fake.userMessage({ channel: fake.ids.general, content: 'and a follow-up', replyTo: mine!.id });
    await waitFor('the second reply', () => fake.botMessages(fake.ids.general).length === 2, 15_000);
    expect(stack.fake.requests.map((r) => userTexts(r.body).at(-1))).toEqual(['first', 'and a follow-up']);
  }, 40_000);

  it("a mention's attachment is saved in the workspace and named to the model", async () => {
    const { fake, stack } = await start('dc-files');
    stack.fake.script([{ content: 'Got the file.' }]);
    const file = fake.addAttachment('notes.txt', Buffer.from('buy milk\n'));
    fake.userMessage({ channel: fake.ids.general, content: `<@${fake.ids.app}> read this`, attachments: [file] });
    await waitFor('the reply', () => fake.botMessages(fake.ids.general).length === 1, 15_000);
    expect(userTexts(stack.fake.requests[0]!.body)[0]).toBe('read this\n\n[Attached files, in the workspace:]\n- uploads/notes.txt (9 B)');
    const folder = workspaceFolderName(sessionKeyOf({ platform: 'discord', conversation: fake.ids.general }));
    expect(await readFile(join(stack.workspaceRoot, folder, 'uploads', 'notes.txt'), 'utf8')).toBe('buy milk\n');
  }, 40_000);

  it('messages sent while a run is active are folded into the next turn; a folded /ask points at the answer', async () => {
    const { fake, stack } = await start('dc-fold');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    stack.fake.setHandler(async (req) => {
      if (stack.fake.requests.length === 1) {
        await held;
        return { content: 'first answer' };
      }
      return { content: `together: ${userTexts(req.body).slice(-2).join(' + ')}` };
    });
    const one = fake.userMessage({ channel: fake.ids.general, content: `<@${fake.ids.app}> one` });
    await waitFor('the first run', () => stack.fake.requests.length === 1, 15_000);
    const two = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'two' });
    await waitFor('/ask deferred', () => two.callbackType === 5);
    // The /ask is queued after its deferral: wait for it, so "three" comes after it in the inbox.
    await waitFor('/ask queued', async () => (await stack.redis.llen(stack.keys.inbox(`discord:${fake.ids.general}`))) === 2);
    const three = fake.userMessage({ channel: fake.ids.general, content: `<@${fake.ids.app}> three` });
    await waitFor('both queued', async () => (await stack.redis.llen(stack.keys.inbox(`discord:${fake.ids.general}`))) === 3);
    release();

    await waitFor('the folded answer', () => fake.botMessages(fake.ids.general).find((m) => m.content.startsWith('together')), 20_000);
    expect(stack.fake.requests).toHaveLength(2);
    const replies = fake.botMessages(fake.ids.general).filter((m) => m.via === 'channel');
    expect(replies.map((m) => [m.content, m.message_reference?.message_id])).toEqual([
      ['first answer', one.id],
      ['together: two + three', three.id],
    ]);
    await waitFor('the /ask pointer', () => original(fake, two)?.content === FOLDED_NOTE, 10_000);
  }, 40_000);
});
