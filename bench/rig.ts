import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sessionKeyOf } from '../src/channels/session-key.js';
import { workspaceFolderName } from '../src/tools/workspace.js';
import type { ChatMessage } from '../src/agent/types.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest, type Step } from '../test/fakes/openai-server.js';
import { startFakeTelegram, TOKEN, type FakeTelegram } from '../test/fakes/telegram-server.js';
import { waitFor, type Spawned } from '../test/helpers/processes.js';
import { freePort } from '../test/helpers/ports.js';
import { spawnNodeTracked, stop } from './children.js';

export const TWO_HOP_QUESTION = 'Read manifest.txt and tell me what the file it names says.';
/** One tool call: model call → read_file → model call → reply (the Redis-per-turn measure's turn). */
export const ONE_TOOL_QUESTION = 'Read target.txt and tell me what it says.';

/**
 * A zero-latency model that does the two-hop task the way a model would: read the file the
 * user names, read the file that one names, answer. Any other message gets a one-line answer.
 */
export function twoHopModel(req: RecordedRequest): Step {
  const messages = req.body.messages as ChatMessage[];
  const last = messages.at(-1)!;
  const text = String(last.content ?? '');
  if (last.role === 'user') {
    if (text.includes('manifest.txt'))
      return { content: 'Let me read the manifest.', toolCalls: [{ name: 'read_file', arguments: '{"path":"manifest.txt"}' }] };
    const asked = /\bRead ([\w-]+\.txt)\b/.exec(text)?.[1];
    if (asked) return { content: `Reading ${asked}.`, toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: asked }) }] };
    return { content: `ANSWER: ok (${text.slice(0, 20)})` };
  }
  const named = /\b([\w-]+\.txt)\b/.exec(text)?.[1];
  if (named && named !== 'manifest.txt' && !text.includes('The secret')) {
    return { content: `It names ${named}; reading it.`, toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: named }) }] };
  }
  return { content: `ANSWER: ${text.trim()}` };
}

export interface TelegramRig {
  tg: FakeTelegram;
  model: FakeOpenAI;
  workspaceRoot: string;
  env: Record<string, string>;
  port: number;
  close(): Promise<void>;
}

export async function startTelegramRig(redisUrl: string, prefix: string): Promise<TelegramRig> {
  const tg = await startFakeTelegram();
  const model = await startFakeOpenAI();
  model.setHandler(twoHopModel);
  const workspaceRoot = await mkdtemp(join(tmpdir(), 'sb-bench-tg-'));
  const port = await freePort();
  const env = {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    OPENAI_BASE_URL: model.baseURL,
    OPENAI_API_KEY: 'bench',
    AGENT_MODEL: 'fake-model',
    WORKSPACE_ROOT: workspaceRoot,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: tg.apiRoot,
    PORT: String(port),
    LOG_LEVEL: 'info',
    // A bench measures the pipeline, not access control: its fake users DM the bot and must get
    // answers, not pairing codes (DM_POLICY's default is `pairing`). It sends no group messages,
    // so GROUP_POLICY does not matter here; a phase that adds some must set it.
    DM_POLICY: 'open',
  };
  return {
    tg,
    model,
    workspaceRoot,
    env,
    port,
    async close() {
      await tg.close();
      await model.close();
      await rm(workspaceRoot, { recursive: true, force: true });
    },
  };
}

/** The files of the two-hop task in a Telegram DM's workspace. */
export async function seedTwoHop(rig: TelegramRig, chatId: number): Promise<void> {
  const dir = join(rig.workspaceRoot, workspaceFolderName(sessionKeyOf({ platform: 'telegram', conversation: String(chatId) })));
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'manifest.txt'), 'The answer is in target.txt.\n');
  await writeFile(join(dir, 'target.txt'), `The secret word for chat ${chatId} is heliotrope.\n`);
}

/** Sends a DM as a user and resolves with the ms from the update to the bot's answer. */
export async function dmAndWait(rig: TelegramRig, chatId: number, text: string, timeoutMs = 60_000): Promise<number> {
  const before = rig.tg.sent.length;
  const from = { id: chatId, is_bot: false, first_name: `User ${chatId}` };
  const t0 = performance.now();
  rig.tg.pushUpdate({ message: rig.tg.message({ chat: { id: chatId, type: 'private' }, from, text }) });
  try {
    await waitFor('the answer', () => rig.tg.sent.slice(before).some((m) => m.chatId === chatId && m.text.startsWith('ANSWER')), timeoutMs, 1);
  } catch (err) {
    const got = rig.tg.sent
      .slice(before)
      .filter((m) => m.chatId === chatId)
      .map((m) => JSON.stringify(m.text.slice(0, 200)));
    throw new Error(`${(err as Error).message} in chat ${chatId}; the bot sent it ${got.length ? got.join(', ') : 'nothing'}`);
  }
  return performance.now() - t0;
}

/** What `npm start` runs after its build step (and what the Docker image runs). */
export const BUILT_MAIN = 'dist/cli/main.js';
/** The same from the sources with tsx (`npm run dev`): no build step. */
export const SOURCE_MAIN = 'src/cli/main.ts';

/**
 * Starts `node <main> <role>` (registered by pid, see children.ts) and waits until it is ready
 * (readyz 200 for a gateway). If it exits or never gets ready it is stopped here, and the
 * error carries the end of its log.
 */
export async function startRole(
  role: 'all' | 'gateway' | 'worker',
  env: Record<string, string>,
  script = BUILT_MAIN,
): Promise<{ proc: Spawned; readyMs: number }> {
  const t0 = performance.now();
  const proc = spawnNodeTracked(script, [role], env);
  const died = () =>
    proc.child.exitCode !== null &&
    Promise.reject(new Error(`${script} ${role} exited ${proc.child.exitCode} before it was ready: ${proc.stderr().slice(-2000)}`));
  try {
    if (role === 'worker') {
      await waitFor('worker ready', () => proc.stderr().includes('"worker ready"') || died(), 30_000, 5);
    } else {
      await waitFor(
        'readyz 200',
        async () => {
          try {
            if ((await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status === 200) return true;
          } catch {
            /* not listening yet */
          }
          return died();
        },
        30_000,
        5,
      );
    }
  } catch (err) {
    await stop(proc, 2_000);
    throw err;
  }
  return { proc, readyMs: performance.now() - t0 };
}

/** Resident set size now and at its peak, in MiB, from /proc. */
export async function rss(pid: number): Promise<{ now: number; peak: number }> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
  return { now: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) };
}
