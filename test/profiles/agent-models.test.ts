import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { waitFor } from '../helpers/processes.js';
import { TelegramHarness } from '../channels/telegram/harness.js';

/**
 * An agent's own model endpoint: its requests go there with the key its apiKeyEnv names, and
 * OPENAI_API_KEY (the stack's `test-key-not-secret`) is never sent to a host it was not given for.
 */
describe('AGENTS_CONFIG: an agent on its own endpoint', () => {
  let dir: string;
  let gpu: FakeOpenAI;
  let local: FakeOpenAI;
  let h: TelegramHarness;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-agent-models-'));
    [gpu, local] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
    for (const fake of [gpu, local]) fake.setHandler((req) => ({ content: `from ${req.body.model as string}` }));
    const file = join(dir, 'agents.yaml');
    await writeFile(
      file,
      [
        'agents:',
        `  - {name: eng, model: {model: qwen2.5-coder, baseUrl: "${gpu.baseURL}", apiKeyEnv: SB_TEST_ENG_KEY}}`,
        `  - {name: local, model: {model: llama3, baseUrl: "${local.baseURL}"}}`,
        '  - {name: default, model: {model: house-model}}',
        'bindings:',
        '  - {platform: telegram, user: "7001", agent: eng}',
        '  - {platform: telegram, user: "7002", agent: local}',
        '',
      ].join('\n'),
    );
    process.env.SB_TEST_ENG_KEY = 'eng-key-for-the-gpu-box';
    h = await TelegramHarness.start('agent-models', { AGENTS_CONFIG: file });
  });

  afterAll(async () => {
    await h?.close();
    await Promise.all([gpu?.close(), local?.close()]);
    delete process.env.SB_TEST_ENG_KEY;
    await rm(dir, { recursive: true, force: true });
  });

  const ask = async (chat: number) => {
    h.dm(chat, 'hello');
    return (await waitFor('the answer', () => h.answers(chat)[0], 20_000)).body.text as string;
  };

  it("eng's requests go to its endpoint with its key", async () => {
    expect(await ask(7001)).toBe('from qwen2.5-coder');
    expect(gpu.requests.map((r) => [r.body.model, r.headers.authorization])).toEqual([['qwen2.5-coder', 'Bearer eng-key-for-the-gpu-box']]);
  });

  it('an agent on another endpoint without apiKeyEnv is not sent OPENAI_API_KEY', async () => {
    expect(await ask(7002)).toBe('from llama3');
    expect(local.requests).toHaveLength(1);
    expect(local.requests[0]!.headers.authorization).not.toContain('test-key-not-secret');
  });

  it('an agent with only a model name uses the environment endpoint and key', async () => {
    expect(h.stack.fake.requests).toHaveLength(0);
    h.stack.fake.setHandler((req) => ({ content: `from ${req.body.model as string}` }));
    expect(await ask(7003)).toBe('from house-model');
    expect(h.stack.fake.requests.map((r) => r.headers.authorization)).toEqual(['Bearer test-key-not-secret']);
  });
});
