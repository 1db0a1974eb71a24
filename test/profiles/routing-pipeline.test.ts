import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { BOT_TOKEN, startFakeSlack, TEAM_ID, type FakeSlack } from '../fakes/slack-server.js';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction } from '../fakes/discord-server.js';
import { stdioEntry, writeMcpConfig } from '../fakes/mcp-harness.js';
import type { RecordedRequest, Step } from '../fakes/openai-server.js';
import { waitFor } from '../helpers/processes.js';
import { dropPrefix, testRedis } from '../helpers/redis.js';
import { readyz, type Stack } from '../helpers/stack.js';
import { TelegramHarness } from '../channels/telegram/harness.js';
import { answers, appMention, eventCallback, nextTs, postCommand, postEvent, SIGNING_SECRET, startSlackStack } from '../channels/slack/helpers.js';

/**
 * AGENTS_CONFIG through the whole pipeline: the real SDKs (grammY, Bolt, discord.js) against the
 * platform fakes, the real gateway and worker roles, real Redis and the fake model. Which agent
 * answers is read where it matters: the system message, the model name and the tools of every
 * model request of the turn.
 */

const SUPPORT_CHANNEL = 'C0123SUPPORT';
const BOSS = 'U0BOSS';
const PROMPTS = {
  support: 'You are the support desk assistant.',
  eng: 'You are the engineering assistant. Answer in code.',
  default: 'You are the general assistant.',
};

type Message = { role: string; content: unknown };
const messagesOf = (req: RecordedRequest): Message[] => req.body.messages as Message[];
const toolNames = (req: RecordedRequest): string[] => ((req.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name).sort();

/** What identifies the agent in one model request. */
const agentSeen = (req: RecordedRequest) => ({ system: messagesOf(req)[0], model: req.body.model as string, tools: toolNames(req) });

/** Each turn: list_files first, then an answer naming the model it was asked as (two requests per turn). */
function listThenAnswer(req: RecordedRequest): Step {
  const messages = messagesOf(req);
  return messages.at(-1)!.role === 'tool'
    ? { content: `answered by ${req.body.model as string}` }
    : { content: null, toolCalls: [{ name: 'list_files', arguments: '{}' }] };
}

/** The model requests made from index `from` on, once `count` of them have arrived. */
async function requestsSince(stack: Stack, from: number, count: number): Promise<RecordedRequest[]> {
  await waitFor(`${count} model requests`, () => stack.fake.requests.length >= from + count, 20_000);
  return stack.fake.requests.slice(from);
}

const SLACK_ENV = { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: SIGNING_SECRET, LINK_PREVIEWS: '1' };

describe('AGENTS_CONFIG routing across Telegram, Slack and Discord (one stack, three channels)', () => {
  let dir: string;
  let slack: FakeSlack;
  let discord: FakeDiscord;
  let h: TelegramHarness;
  let stack: Stack;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-routing-'));
    slack = await startFakeSlack();
    discord = await startFakeDiscord();
    await mkdir(join(dir, 'prompts'));
    await writeFile(join(dir, 'prompts', 'eng.md'), `${PROMPTS.eng}\n`);
    // Two MCP servers of the same fake: each agent gets only the ones it names.
    const mcp = await writeMcpConfig(dir, { tickets: stdioEntry({ tools: { include: ['lookup'] } }), wiki: stdioEntry({ tools: { include: ['lookup'] } }) });
    const agents = join(dir, 'agents.yaml');
    await writeFile(
      agents,
      [
        'agents:',
        '  - name: support',
        `    prompt: ${PROMPTS.support}`,
        '    model: {model: support-model}',
        '    tools: {deny: [edit_file, write_file]}',
        '    mcpServers: [tickets]',
        '  - name: eng',
        '    prompt: {file: prompts/eng.md}',
        '    model: {model: eng-model}',
        '    tools: {allow: [list_files, read_file, write_file, edit_file, wiki__lookup]}',
        '    mcpServers: [wiki]',
        '    workspace: channel',
        '    limits: {maxSteps: 30}',
        '  - name: default',
        `    prompt: ${PROMPTS.default}`,
        '    model: {model: default-model}',
        '    tools: {allow: [list_files, read_file, search_files]}',
        '    mcpServers: []',
        'bindings:',
        `  - {platform: slack, channel: ${SUPPORT_CHANNEL}, agent: support}`,
        `  - {platform: slack, channel: ${SUPPORT_CHANNEL}, user: ${BOSS}, agent: eng}`,
        // guild implies discord.
        `  - {guild: "${discord.ids.guild}", agent: eng}`,
        '  - {platform: telegram, kind: dm, agent: default}',
        'default: default',
        '',
      ].join('\n'),
    );
    h = await TelegramHarness.start('routing', {
      ...SLACK_ENV,
      SLACK_API_URL: slack.apiUrl,
      ...discord.env(),
      AGENTS_CONFIG: agents,
      MCP_CONFIG: mcp,
    });
    stack = h.stack;
    const dc = stack.gateway.channels.find((c) => c.name === 'discord')!;
    await waitFor('the Discord gateway to be ready', () => dc.health().connected, 15_000);
    // Ready: Slack identified and both MCP servers connected on the worker.
    await waitFor('slack identity and the MCP servers', async () => {
      const res = await readyz(stack);
      const body = (await res.json()) as { channels?: { slack?: { connected?: boolean } } };
      return res.status === 200 && body.channels?.slack?.connected === true;
    });
    stack.fake.setHandler(listThenAnswer);
  });

  afterAll(async () => {
    await h?.close();
    await slack?.close();
    await discord?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const DEFAULT_SEEN = {
    system: { role: 'system', content: PROMPTS.default },
    model: 'default-model',
    tools: ['list_files', 'read_file', 'search_files'],
  };
  const SUPPORT_SEEN = {
    system: { role: 'system', content: PROMPTS.support },
    model: 'support-model',
    // Everything on Slack less write_file and edit_file, with tickets' tools but not wiki's.
    tools: ['cancel_schedule', 'list_files', 'list_schedules', 'read_file', 'schedule_task', 'search_files', 'send_file', 'tickets__lookup'],
  };
  const ENG_SEEN = {
    system: { role: 'system', content: PROMPTS.eng },
    model: 'eng-model',
    tools: ['edit_file', 'list_files', 'read_file', 'wiki__lookup', 'write_file'],
  };

  it('(a) a Telegram DM is answered by default: its prompt, its model and only its tools in every request of the turn', async () => {
    const chat = 5001;
    const before = stack.fake.requests.length;
    h.dm(chat, 'hello there');
    await waitFor('the answer', () => h.answers(chat).length === 1, 20_000);
    expect(h.answers(chat)[0]!.body.text).toBe('answered by default-model');
    const turn = await requestsSince(stack, before, 2);
    expect(turn).toHaveLength(2);
    for (const req of turn) expect(agentSeen(req)).toEqual(DEFAULT_SEEN);
    expect(await stack.redis.get(stack.keys.agentOf(`telegram:${chat}`))).toBe('default');
  });

  it('(b) a Slack mention in the support channel is answered by support: denied tools absent, only its MCP server', async () => {
    const ts = nextTs();
    const before = stack.fake.requests.length;
    await postEvent(stack.baseUrl, eventCallback(appMention(SUPPORT_CHANNEL, ts, 'my printer is on fire')));
    await waitFor('the answer', () => answers(slack, SUPPORT_CHANNEL).find((m) => m.thread_ts === ts), 20_000);
    expect(answers(slack, SUPPORT_CHANNEL).find((m) => m.thread_ts === ts)!.text).toBe('answered by support-model');
    const turn = await requestsSince(stack, before, 2);
    expect(turn).toHaveLength(2);
    for (const req of turn) expect(agentSeen(req)).toEqual(SUPPORT_SEEN);
    const session = sessionKeyOf({ platform: 'slack', conversation: SUPPORT_CHANNEL, thread: ts });
    expect(await stack.redis.get(stack.keys.agentOf(session))).toBe('support');
    // The job, its result, the run record and the metrics carry the agent's name.
    const job = await waitFor('the completed job', async () =>
      (await stack.queue.getJobs(['completed'])).find((j) => j.data.session === session && j.returnvalue?.state === 'completed'),
    );
    expect([job.data.agent, job.returnvalue.agent]).toEqual(['support', 'support']);
    expect(await stack.metrics.registry.getSingleMetricAsString('switchboard_runs_total')).toMatch(/state="completed",reason="none",agent="support"} 1/);

    // /agent in that thread names the recorded agent and what it has.
    await postEvent(stack.baseUrl, eventCallback(appMention(SUPPORT_CHANNEL, nextTs(), '/agent', { thread_ts: ts })));
    const reply = await waitFor('the /agent reply', () => answers(slack, SUPPORT_CHANNEL).find((m) => m.thread_ts === ts && m.text.startsWith('Agent here')));
    expect(reply.text.split('\n')).toEqual([
      "Agent here: support (this conversation's agent since it started; /reset picks again).",
      'Model: support-model.',
      'Tools: list_files, read_file, search_files, send_file, schedule_task, list_schedules, cancel_schedule.',
      'MCP servers: tickets.',
      'Skills: none.',
      'Workspace: its own folder for this conversation.',
      'Memory: off.',
    ]);
    expect(stack.fake.requests).toHaveLength(before + 2);
  });

  it('(c) the same channel from the user of the more specific binding is answered by eng', async () => {
    const ts = nextTs();
    const before = stack.fake.requests.length;
    await postEvent(stack.baseUrl, eventCallback(appMention(SUPPORT_CHANNEL, ts, 'why is the build red?', { user: BOSS })));
    await waitFor('the answer', () => answers(slack, SUPPORT_CHANNEL).find((m) => m.thread_ts === ts), 20_000);
    expect(answers(slack, SUPPORT_CHANNEL).find((m) => m.thread_ts === ts)!.text).toBe('answered by eng-model');
    const turn = await requestsSince(stack, before, 2);
    expect(turn).toHaveLength(2);
    for (const req of turn) expect(agentSeen(req)).toEqual(ENG_SEEN);
    expect(await stack.redis.get(stack.keys.agentOf(sessionKeyOf({ platform: 'slack', conversation: SUPPORT_CHANNEL, thread: ts })))).toBe('eng');
  });

  it('(d) a Discord guild message and a guild /ask are answered by eng; a Discord DM (no binding) by the default', async () => {
    const before = stack.fake.requests.length;
    discord.userMessage({ channel: discord.ids.general, content: `<@${discord.ids.app}> deploy status?` });
    await waitFor('the guild reply', () => discord.botMessages(discord.ids.general).find((m) => m.content === 'answered by eng-model'), 20_000);
    const mention = await requestsSince(stack, before, 2);
    expect(mention).toHaveLength(2);
    for (const req of mention) expect(agentSeen(req)).toEqual(ENG_SEEN);

    const afterMention = stack.fake.requests.length;
    const ask = discord.slash({ name: 'ask', channel: discord.ids.random, prompt: 'and in random?' });
    const original = () => (ask.originalId ? discord.messages.find((m) => m.id === ask.originalId) : undefined);
    await waitFor('the /ask answer', () => original()?.content === 'answered by eng-model', 20_000);
    const asked = await requestsSince(stack, afterMention, 2);
    expect(asked).toHaveLength(2);
    for (const req of asked) expect(agentSeen(req)).toEqual(ENG_SEEN);

    const afterAsk = stack.fake.requests.length;
    discord.userMessage({ channel: discord.ids.dmAlice, content: 'hello in private' });
    await waitFor('the DM reply', () => discord.botMessages(discord.ids.dmAlice).find((m) => m.content === 'answered by default-model'), 20_000);
    const dm = await requestsSince(stack, afterAsk, 2);
    expect(dm).toHaveLength(2);
    for (const req of dm) expect(agentSeen(req)).toEqual(DEFAULT_SEEN);
    expect(await stack.redis.get(stack.keys.agentOf(`discord:${discord.ids.general}`))).toBe('eng');
    expect(await stack.redis.get(stack.keys.agentOf(`discord:${discord.ids.dmAlice}`))).toBe('default');
  });

  it('(e) /agent names the right agent on each platform, and /status names the recorded one', async () => {
    const before = stack.fake.requests.length;
    // Telegram: the DM of (a), recorded with default.
    const chat = 5001;
    const cmd = (text: string) => h.dm(chat, text, { entities: [{ type: 'bot_command', offset: 0, length: text.length }] });
    cmd('/agent');
    await waitFor('the telegram /agent reply', () => h.answers(chat).length === 2);
    expect(String(h.answers(chat)[1]!.body.text).split('\n')).toEqual([
      "Agent here: default (this conversation's agent since it started; /reset picks again).",
      'Model: default-model.',
      'Tools: list_files, read_file, search_files.',
      'MCP servers: none.',
      'Skills: none.',
      'Workspace: its own folder for this conversation.',
      'Memory: off.',
    ]);
    cmd('/status');
    await waitFor('the telegram /status reply', () => h.answers(chat).length === 3);
    expect(h.answers(chat)[2]!.body.text).toMatch(/^No run is active\. Last run: completed, \d+ s ago\. Agent: default \(\/agent tells more\)\.$/);

    // Slack /ask agent: the channel's /ask conversation has no agent yet; the bindings give each asker theirs.
    const asked = async (user: string) =>
      ((await (await postCommand(stack.baseUrl, { channel_id: SUPPORT_CHANNEL, user_id: user, text: 'agent' })).json()) as { text: string }).text.split('\n');
    const boss = await asked(BOSS);
    expect(boss[0]).toBe('Agent here: eng (what the bindings give this conversation).');
    expect(boss.slice(1)).toEqual([
      'Model: eng-model.',
      'Tools: list_files, read_file, write_file, edit_file.',
      'MCP servers: wiki.',
      'Skills: none.',
      'Workspace: one folder shared by every conversation in this channel.',
      'Memory: off.',
      'At most 30 steps per request.',
    ]);
    expect((await asked('U0ADA'))[0]).toBe('Agent here: support (what the bindings give this conversation).');

    // Discord: the slash command, in the guild (eng, recorded by (d)) and in a DM (default).
    const slash = async (channel: string): Promise<FakeInteraction> => {
      const ix = discord.slash({ name: 'agent', channel });
      await waitFor('the /agent reply', () => ix.callbackType !== undefined);
      return ix;
    };
    const guild = await slash(discord.ids.general);
    expect(guild).toMatchObject({ callbackType: 4, callbackFlags: 64 | 4 });
    expect(guild.callbackContent!.split('\n')[0]).toBe("Agent here: eng (this conversation's agent since it started; /reset picks again).");
    expect(guild.callbackContent).toContain('\nModel: eng-model.\n');
    const dm = await slash(discord.ids.dmAlice);
    expect(dm.callbackContent!.split('\n')[0]).toBe("Agent here: default (this conversation's agent since it started; /reset picks again).");
    expect(discord.commands.global.map((c: { name: string }) => c.name)).toContain('agent');
    // Commands start no run.
    expect(stack.fake.requests).toHaveLength(before);
  });
});

/**
 * A changed AGENTS_CONFIG, read at the next start: the roles are restarted with a new file on the
 * same Redis prefix (the sessions' state kept), as an operator's redeploy does.
 */
describe('AGENTS_CONFIG changed between starts', () => {
  const CHANNEL = 'C0FLIP';
  let dir: string;
  let slack: FakeSlack;
  let stack: Stack | undefined;
  /** The prefix of a stack whose roles were stopped without dropping its keys (dropped here if nothing else did). */
  let orphanPrefix: string | undefined;

  const agentsFile = (agent: string) =>
    [
      'agents:',
      `  - {name: support, prompt: ${PROMPTS.support}, model: {model: support-model}}`,
      `  - {name: eng, prompt: "${PROMPTS.eng}", model: {model: eng-model}}`,
      `  - {name: default, prompt: ${PROMPTS.default}, model: {model: default-model}}`,
      'bindings:',
      // team implies slack.
      `  - {team: ${TEAM_ID}, channel: ${CHANNEL}, agent: ${agent}}`,
      '',
    ].join('\n');

  /** Stops the roles of `s` and its clients, keeping its Redis keys (Stack.close would drop them). */
  async function stopKeepingState(s: Stack): Promise<void> {
    orphanPrefix = s.config.queue.prefix;
    await s.gateway.close();
    await s.worker.close(true);
    await s.queue.close();
    s.redis.disconnect();
    await s.fake.close();
    await rm(s.workspaceRoot, { recursive: true, force: true });
  }

  /** A mention in CHANNEL carrying its workspace, as Slack's events do (`team`), for the team binding. */
  const flipMention = (ts: string, text: string, extra: Record<string, unknown> = {}) =>
    eventCallback(appMention(CHANNEL, ts, text, { team: TEAM_ID, ...extra }));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-routing-flip-'));
    slack = await startFakeSlack();
  });
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
    if (orphanPrefix) {
      const redis = testRedis();
      await dropPrefix(redis, orphanPrefix);
      redis.disconnect();
      orphanPrefix = undefined;
    }
  });
  afterAll(async () => {
    await slack?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('(f) a session keeps its agent after the binding moves; a new thread gets the new one, and so does the old after /reset', {
    timeout: 60_000,
  }, async () => {
    const file = join(dir, 'agents.yaml');
    await writeFile(file, agentsFile('support'));
    const first = await startSlackStack('routing-flip', slack, { AGENTS_CONFIG: file });
    stack = first;
    first.fake.setHandler((req) => ({ content: `answered by ${req.body.model as string}` }));
    const old = nextTs();
    const oldSession = sessionKeyOf({ platform: 'slack', conversation: CHANNEL, thread: old });
    await postEvent(first.baseUrl, flipMention(old, 'first question'));
    await waitFor('the first answer', () => answers(slack, CHANNEL).find((m) => m.thread_ts === old), 20_000);
    expect(agentSeen(first.fake.requests[0]!).model).toBe('support-model');
    expect(await first.redis.get(first.keys.agentOf(oldSession))).toBe('support');

    // The operator moves the channel to eng and restarts.
    await writeFile(file, agentsFile('eng'));
    const prefix = first.config.queue.prefix;
    stack = undefined;
    await stopKeepingState(first);
    const second = await startSlackStack('routing-flip', slack, { AGENTS_CONFIG: file, QUEUE_PREFIX: prefix });
    stack = second;
    orphanPrefix = undefined;
    second.fake.setHandler((req) => ({ content: `answered by ${req.body.model as string}` }));
    const threadAnswers = (ts: string) => answers(slack, CHANNEL).filter((m) => m.thread_ts === ts);

    // The old thread keeps support (and its history).
    await postEvent(second.baseUrl, flipMention(nextTs(), 'second question', { thread_ts: old }));
    await waitFor('the old thread answered again', () => threadAnswers(old).length === 2, 20_000);
    expect(threadAnswers(old)[1]!.text).toBe('answered by support-model');
    const kept = second.fake.requests[0]!;
    expect(agentSeen(kept)).toMatchObject({ system: { role: 'system', content: PROMPTS.support }, model: 'support-model' });
    expect(messagesOf(kept).map((m) => String(m.content))).toEqual([PROMPTS.support, 'first question', 'answered by support-model', 'second question']);
    await postEvent(second.baseUrl, flipMention(nextTs(), '/agent', { thread_ts: old }));
    await waitFor('the /agent reply', () => threadAnswers(old).length === 3);
    expect(threadAnswers(old)[2]!.text.split('\n')[0]).toBe("Agent here: support (this conversation's agent since it started; /reset picks again).");
    await postEvent(second.baseUrl, flipMention(nextTs(), '/status', { thread_ts: old }));
    await waitFor('the /status reply', () => threadAnswers(old).length === 4);
    expect(threadAnswers(old)[3]!.text).toMatch(/ Agent: support \(\/agent tells more\)\.$/);

    // A new thread in the channel gets eng.
    const fresh = nextTs();
    await postEvent(second.baseUrl, flipMention(fresh, 'a new question'));
    await waitFor('the new thread answered', () => threadAnswers(fresh).length === 1, 20_000);
    expect(threadAnswers(fresh)[0]!.text).toBe('answered by eng-model');
    expect(agentSeen(second.fake.requests[1]!)).toMatchObject({ system: { role: 'system', content: PROMPTS.eng }, model: 'eng-model' });

    // /reset forgets the old thread's agent; its next turn is eng's.
    await postEvent(second.baseUrl, flipMention(nextTs(), '/reset', { thread_ts: old }));
    await waitFor('the reset answer', () => threadAnswers(old).length === 5, 20_000);
    expect(threadAnswers(old)[4]!.text).toContain('Fresh start');
    await waitFor('the agent forgotten', async () => (await second.redis.exists(second.keys.agentOf(oldSession))) === 0);
    await postEvent(second.baseUrl, flipMention(nextTs(), 'after the reset', { thread_ts: old }));
    await waitFor('the old thread answered after the reset', () => threadAnswers(old).length === 6, 20_000);
    expect(threadAnswers(old)[5]!.text).toBe('answered by eng-model');
    const after = second.fake.requests.at(-1)!;
    expect(messagesOf(after).map((m) => String(m.content))).toEqual([PROMPTS.eng, 'after the reset']);
    expect(after.body.model).toBe('eng-model');
    expect(await second.redis.get(second.keys.agentOf(oldSession))).toBe('eng');
    expect(second.fake.requests).toHaveLength(3);
  });
});
