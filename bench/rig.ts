import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sessionKeyOf } from '../src/channels/session-key.js';
import { workspaceFolderName } from '../src/tools/workspace.js';
import type { ChatMessage } from '../src/agent/types.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest, type Step } from '../test/fakes/openai-server.js';
import { startFakeTelegram, TOKEN, type FakeTelegram } from '../test/fakes/telegram-server.js';
import { spawnNode, waitFor, type Spawned } from '../test/helpers/processes.js';
import { freePort } from '../test/helpers/ports.js';

export const TWO_HOP_QUESTION = 'Read manifest.txt and tell me what the file it names says.';

/**
 * A zero-latency model that does the two-hop task the way a model would: read the file the
 * user names, read the file that one names, answer. Any other message gets a one-line answer.
 */
export function twoHopModel(req: RecordedRequest): Step {
  const messages = req.body.messages as ChatMessage[];
  const last = messages.at(-1)!;
  const text = String(last.content ?? '');
  if (last.role === 'user') {
    if (!text.includes('manifest.txt')) return { content: `ANSWER: ok (${text.slice(0, 20)})` };
    return { content: 'Let me read the manifest.', toolCalls: [{ name: 'read_file', arguments: '{"path":"manifest.txt"}' }] };
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
  await waitFor('the answer', () => rig.tg.sent.slice(before).some((m) => m.chatId === chatId && m.text.startsWith('ANSWER')), timeoutMs, 1);
  return performance.now() - t0;
}

/** Starts `node <main> <role>` and waits until it is ready (readyz 200 for a gateway). */
/** What `npm start` runs after its build step (and what the Docker image runs). */
export const BUILT_MAIN = 'dist/cli/main.js';

export async function startRole(role: 'all' | 'gateway' | 'worker', env: Record<string, string>, script = BUILT_MAIN): Promise<{ proc: Spawned; readyMs: number }> {
  const t0 = performance.now();
  const proc = spawnNode(script, [role], env);
  if (role === 'worker') {
    await waitFor('worker ready', () => proc.stderr().includes('"worker ready"'), 30_000, 5);
  } else {
    await waitFor('readyz 200', async () => {
      try {
        return (await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status === 200;
      } catch {
        return false;
      }
    }, 30_000, 5);
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
