import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';
import { startFakeSlack, TEAM_ID, type FakeSlack } from '../fakes/slack-server.js';
import type { RecordedRequest, Step } from '../fakes/openai-server.js';
import { waitFor } from '../helpers/processes.js';
import type { Stack } from '../helpers/stack.js';
import { answers, appMention, eventCallback, nextTs, postEvent, startSlackStack } from '../channels/slack/helpers.js';

/**
 * Workspace scopes through the pipeline (Slack, the real roles, the fake model): `channel` gives
 * every thread of a channel one folder, `user` one per person, `shared:<name>` one named folder
 * for every conversation of the agent, also when two of them write at the same time.
 */

type Message = { role: string; content: unknown };
const messagesOf = (req: RecordedRequest): Message[] => req.body.messages as Message[];

/** The turn's request, as the user wrote it: `file=<path> seed=<s> lines=<n> [shared]`. */
function orderOf(req: RecordedRequest): { file: string; seed: string; lines: number; shared: boolean } {
  const messages = messagesOf(req);
  const text = String([...messages].reverse().find((m) => m.role === 'user')!.content);
  const field = (name: string) => new RegExp(`${name}=(\\S+)`).exec(text)?.[1];
  return { file: field('file')!, seed: field('seed')!, lines: Number(field('lines') ?? 3), shared: /\bshared\b/.test(text) };
}

/** The file a turn writes: numbered lines carrying its seed, so a torn or mixed file shows. */
const contentOf = (seed: string, lines: number) =>
  Array.from({ length: lines }, (_, i) => `${seed} line ${String(i).padStart(6, '0')} ${'x'.repeat(40)}`).join('\n');

/** The results of the tool calls since the turn's user message. */
const resultsOfTurn = (req: RecordedRequest): string[] => {
  const messages = messagesOf(req);
  const start = messages.map((m) => m.role).lastIndexOf('user');
  return messages
    .slice(start + 1)
    .filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
};

/**
 * The scripted model: write the ordered file (and `shared.md` when asked), then list_files, then
 * answer with what the listing showed. `gate` holds a turn's first request (to make turns overlap).
 */
function writerModel(gate: (req: RecordedRequest) => Promise<void> = async () => undefined) {
  return async (req: RecordedRequest): Promise<Step> => {
    const order = orderOf(req);
    const done = resultsOfTurn(req).length;
    const calls = [
      { name: 'write_file', arguments: JSON.stringify({ path: order.file, content: contentOf(order.seed, order.lines) }) },
      ...(order.shared
        ? [{ name: 'write_file', arguments: JSON.stringify({ path: 'shared.md', content: contentOf(`shared-${order.seed}`, order.lines) }) }]
        : []),
      { name: 'list_files', arguments: '{}' },
    ];
    if (done === 0) await gate(req);
    const next = calls[done];
    return next ? { content: null, toolCalls: [next] } : { content: `done ${order.file}` };
  };
}

/** The folders directly under `root` that hold `file`. */
async function foldersHolding(root: string, file: string): Promise<string[]> {
  const found: string[] = [];
  for (const name of await readdir(root)) {
    if ((await readdir(join(root, name)).catch(() => [] as string[])).includes(file)) found.push(name);
  }
  return found;
}

describe('workspace scopes through the pipeline (Slack)', () => {
  let dir: string;
  let slack: FakeSlack;
  let stack: Stack;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-scopes-'));
    const agents = join(dir, 'agents.yaml');
    await writeFile(
      agents,
      [
        'agents:',
        '  - {name: crew, prompt: You work for the crew channel., workspace: channel}',
        '  - {name: desk, prompt: You keep each person their own desk., workspace: user}',
        '  - {name: pool, prompt: You keep the team pool., workspace: "shared:team"}',
        '  - {name: default}',
        'bindings:',
        '  - {platform: slack, channel: C0CREW, agent: crew}',
        '  - {platform: slack, channel: C0DESK, agent: desk}',
        '  - {platform: slack, channel: C0POOLA, agent: pool}',
        '  - {platform: slack, channel: C0POOLB, agent: pool}',
        '',
      ].join('\n'),
    );
    slack = await startFakeSlack();
    stack = await startSlackStack('scopes', slack, { AGENTS_CONFIG: agents });
    stack.fake.setHandler(writerModel());
  });
  afterAll(async () => {
    await stack?.close();
    await slack?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Mentions the bot in a new thread of `channel` and returns its ts. */
  async function ask(channel: string, text: string, user = 'U0ADA'): Promise<string> {
    const ts = nextTs();
    const res = await postEvent(stack.baseUrl, eventCallback(appMention(channel, ts, text, { user, team: TEAM_ID })));
    expect(res.status).toBe(200);
    return ts;
  }
  const answered = (channel: string, ts: string) =>
    waitFor(`the answer in ${channel} ${ts}`, () => answers(slack, channel).find((m) => m.thread_ts === ts), 30_000);
  /** The listing the model got in a turn (its last tool result), by the file the turn wrote. */
  const listingOf = (file: string): string => {
    const last = stack.fake.requests.filter((r) => orderOf(r).file === file).at(-1)!;
    return resultsOfTurn(last).at(-1)!;
  };
  const read = (folder: string, file: string) => readFile(join(stack.workspaceRoot, folder, file), 'utf8');

  it('channel: two threads of one channel write into one folder, and each listing shows what is there', async () => {
    const first = await ask('C0CREW', 'file=crew-a.md seed=A');
    await answered('C0CREW', first);
    const second = await ask('C0CREW', 'file=crew-b.md seed=B');
    await answered('C0CREW', second);

    const [folder, ...others] = await foldersHolding(stack.workspaceRoot, 'crew-a.md');
    expect(others).toEqual([]);
    expect(await foldersHolding(stack.workspaceRoot, 'crew-b.md')).toEqual([folder]);
    // Not either thread's own session folder.
    for (const ts of [first, second]) expect(folder).not.toBe(workspaceFolderName(sessionKeyOf({ platform: 'slack', conversation: 'C0CREW', thread: ts })));
    expect(await read(folder!, 'crew-a.md')).toBe(contentOf('A', 3));
    expect(await read(folder!, 'crew-b.md')).toBe(contentOf('B', 3));
    expect(listingOf('crew-a.md')).toContain('crew-a.md');
    expect(listingOf('crew-a.md')).not.toContain('crew-b.md');
    expect(listingOf('crew-b.md')).toMatch(/crew-a\.md[\s\S]*crew-b\.md/);
    expect(answers(slack, 'C0CREW').map((m) => m.text)).toEqual(['done crew-a.md', 'done crew-b.md']);
  });

  it('user: one folder per person, across their threads of a channel', async () => {
    for (const [user, file] of [
      ['U0ADA', 'ada-1.md'],
      ['U0BOB', 'bob-1.md'],
      ['U0ADA', 'ada-2.md'],
    ] as const) {
      await answered('C0DESK', await ask('C0DESK', `file=${file} seed=${file}`, user));
    }
    const [ada, ...more] = await foldersHolding(stack.workspaceRoot, 'ada-1.md');
    expect(more).toEqual([]);
    expect(await foldersHolding(stack.workspaceRoot, 'ada-2.md')).toEqual([ada]);
    const [bob] = await foldersHolding(stack.workspaceRoot, 'bob-1.md');
    expect(bob).toBeDefined();
    expect(bob).not.toBe(ada);
    expect((await readdir(join(stack.workspaceRoot, ada!))).sort()).toEqual(['ada-1.md', 'ada-2.md']);
    expect(await readdir(join(stack.workspaceRoot, bob!))).toEqual(['bob-1.md']);
    // Ada's second thread sees her first file, not Bob's.
    expect(listingOf('ada-2.md')).toContain('ada-1.md');
    expect(listingOf('ada-2.md')).not.toContain('bob-1.md');
    expect(listingOf('bob-1.md')).not.toContain('ada-1.md');
  });

  it('shared:team: two channels running at once write into one folder; every file is whole', { timeout: 60_000 }, async () => {
    // Each turn's first request waits until both turns have made theirs: the two runs overlap.
    const arrived = new Set<string>();
    stack.fake.setHandler(
      writerModel(async (req) => {
        arrived.add(orderOf(req).file);
        await waitFor('both turns at the model', () => arrived.size === 2, 15_000);
      }),
    );
    const LINES = 2_000; // ~110 KB per file
    try {
      const [a, b] = await Promise.all([
        ask('C0POOLA', `file=pool-a.md seed=PA lines=${LINES} shared`),
        ask('C0POOLB', `file=pool-b.md seed=PB lines=${LINES} shared`, 'U0BOB'),
      ]);
      await Promise.all([answered('C0POOLA', a), answered('C0POOLB', b)]);
    } finally {
      stack.fake.setHandler(writerModel());
    }
    expect([...arrived].sort()).toEqual(['pool-a.md', 'pool-b.md']);

    const [folder, ...others] = await foldersHolding(stack.workspaceRoot, 'pool-a.md');
    expect(others).toEqual([]);
    expect(await foldersHolding(stack.workspaceRoot, 'pool-b.md')).toEqual([folder]);
    expect(await foldersHolding(stack.workspaceRoot, 'shared.md')).toEqual([folder]);
    expect(await read(folder!, 'pool-a.md')).toBe(contentOf('PA', LINES));
    expect(await read(folder!, 'pool-b.md')).toBe(contentOf('PB', LINES));
    // Both wrote shared.md: it is one of the two, whole, never a mix.
    expect([contentOf('shared-PA', LINES), contentOf('shared-PB', LINES)]).toContain(await read(folder!, 'shared.md'));
    // No temp file of a write was left behind.
    expect((await readdir(join(stack.workspaceRoot, folder!))).sort()).toEqual(['pool-a.md', 'pool-b.md', 'shared.md']);
    for (const file of ['pool-a.md', 'pool-b.md']) expect(resultsOfTurn(stack.fake.requests.filter((r) => orderOf(r).file === file).at(-1)!)).toHaveLength(3);
    expect(answers(slack, 'C0POOLA').map((m) => m.text)).toEqual(['done pool-a.md']);
    expect(answers(slack, 'C0POOLB').map((m) => m.text)).toEqual(['done pool-b.md']);
  });
});
