import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { PLACEHOLDER } from '../../../src/channels/telegram/writer.js';
import { startFakeOpenAI, type FakeOpenAI } from '../../fakes/openai-server.js';
import { startFakeTelegram, TOKEN, type FakeTelegram, type RecordedCall } from '../../fakes/telegram-server.js';
import { spawnNode, spawnWorker, waitFor, type Spawned } from '../../helpers/processes.js';
import { dropPrefix, REDIS_URL, testRedis, uniquePrefix } from '../../helpers/redis.js';

// A worker process killed between marking an answer's piece started and Telegram's answer, at
// each point of the placeholder's two writes: the next worker makes exactly one answer visible.
// Telegram's sendMessage has no idempotency key and a chat cannot be listed, so the piece is
// posted as a placeholder (its id journaled) and edited into it (see src/channels/kit/pieces.ts).
describe('telegram: a worker killed while posting an answer (real processes, SIGKILL)', () => {
  const redis = testRedis();
  const prefix = uniquePrefix('tgkill');
  let tg: FakeTelegram;
  let model: FakeOpenAI;
  let root: string;
  let gateway: Spawned;
  let env: Record<string, string>;
  const workers: Spawned[] = [];

  beforeAll(async () => {
    tg = await startFakeTelegram();
    model = await startFakeOpenAI();
    model.setHandler((req) => {
      const users = (req.body.messages as ChatMessage[]).filter((m) => m.role === 'user');
      return { content: `answer to ${String(users.at(-1)?.content)}` };
    });
    root = await mkdtemp(join(tmpdir(), 'sb-tgkill-'));
    env = {
      REDIS_URL,
      QUEUE_PREFIX: prefix,
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: 'kill-test-key-not-secret',
      AGENT_MODEL: 'fake-model',
      WORKSPACE_ROOT: root,
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: tg.apiRoot,
      DM_POLICY: 'open',
      USER_RATE_LIMIT: '0',
      STREAM_ANSWERS: '0',
      PORT: '0',
      LOG_LEVEL: 'info',
      // A dead worker's run comes back in about 3 s.
      LOCK_DURATION_MS: '2000',
      STALLED_INTERVAL_MS: '1000',
      RECONCILE_INTERVAL_MS: '3600000',
    };
    gateway = spawnNode('src/cli/main.ts', ['gateway'], env);
    await waitFor('the gateway to poll Telegram', () => tg.pendingPolls() > 0, 60_000);
  }, 90_000);

  afterAll(async () => {
    for (const w of workers) {
      w.kill('SIGKILL');
      await w.exited;
    }
    gateway?.kill('SIGTERM');
    await gateway?.exited;
    await tg?.close();
    await model?.close();
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await rm(root, { recursive: true, force: true });
  });

  const start = async () => {
    const w = await spawnWorker(env);
    workers.push(w);
    return w;
  };
  const dm = (chat: number, text: string) =>
    tg.pushUpdate({ message: tg.message({ chat: { id: chat, type: 'private' }, from: { id: chat, is_bot: false, first_name: 'Ada' }, text }) });
  /** What the person sees in the chat: the bot's messages, status messages and placeholders apart. */
  const visible = (chat: number) => tg.sent.filter((m) => m.chatId === chat && !m.silent && !m.deleted && m.raw !== PLACEHOLDER).map((m) => m.text);
  const orphans = (chat: number) => tg.sent.filter((m) => m.chatId === chat && !m.deleted && m.raw === PLACEHOLDER).length;

  /** Kills the worker the first time `when` matches a call, at the point `hold` names; the next worker finishes the answer. */
  async function killAt(chat: number, hold: 'request' | 'response', when: (call: RecordedCall) => boolean): Promise<void> {
    const doomed = await start();
    let struck = false;
    const strike = (call: RecordedCall) => {
      if (struck || Number(call.body?.chat_id) !== chat || !when(call)) return 0;
      struck = true;
      doomed.kill('SIGKILL');
      return 1_000;
    };
    if (hold === 'request') tg.holdRequests(strike);
    else tg.holdResponses(strike);
    try {
      dm(chat, `question ${chat}`);
      await waitFor('the strike', () => struck, 30_000);
      await doomed.exited;
    } finally {
      tg.holdRequests(undefined);
      tg.holdResponses(undefined);
    }
    const heir = await start();
    await waitFor('the answer', () => visible(chat).length > 0, 30_000);
    // Anything still under way (a second copy, a repeated edit) has had time to land.
    await new Promise((r) => setTimeout(r, 1_500));
    // One worker at a time: the next case's strike must land on its own doomed worker.
    heir.kill('SIGTERM');
    await heir.exited;
  }

  const placeholder = (c: RecordedCall) => c.method === 'sendMessage' && c.body.text === PLACEHOLDER;
  const fill = (c: RecordedCall) => c.method === 'editMessageText' && String(c.body.text).startsWith('answer to');

  it('killed before the placeholder reached Telegram: one answer, nothing orphaned', async () => {
    const chat = 71_001;
    await killAt(chat, 'request', placeholder);
    expect(tg.calls.some((c) => c.dropped && placeholder(c))).toBe(true);
    expect(visible(chat)).toEqual([`answer to question ${chat}`]);
    expect(orphans(chat)).toBe(0);
  }, 120_000);

  it('killed after Telegram stored the placeholder, before its id came back: one answer, one orphan "…"', async () => {
    const chat = 71_002;
    await killAt(chat, 'response', placeholder);
    expect(visible(chat)).toEqual([`answer to question ${chat}`]);
    expect(orphans(chat)).toBe(1);
  }, 120_000);

  it('killed before the edit into the placeholder reached Telegram: one answer, in the placeholder', async () => {
    const chat = 71_003;
    await killAt(chat, 'request', fill);
    expect(visible(chat)).toEqual([`answer to question ${chat}`]);
    expect(orphans(chat)).toBe(0);
  }, 120_000);

  it('killed after Telegram made the edit, before it was confirmed: one answer; the repeated edit changes nothing', async () => {
    const chat = 71_004;
    await killAt(chat, 'response', fill);
    expect(visible(chat)).toEqual([`answer to question ${chat}`]);
    expect(orphans(chat)).toBe(0);
    expect(tg.sent.filter((m) => m.chatId === chat && !m.silent).map((m) => m.edits)).toEqual([1]);
  }, 120_000);
});
