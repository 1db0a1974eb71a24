import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runAgent } from '../../src/agent/loop.js';
import { createOpenAIModel } from '../../src/agent/openai-model.js';
import type { AgentEvent, AgentLimits, ChatMessage, RunOutcome, StepJournal, TokenAllowance } from '../../src/agent/types.js';
import { buildTools } from '../../src/tools/index.js';
import { Workspace } from '../../src/tools/workspace.js';
import type { Tool } from '../../src/tools/types.js';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest } from '../fakes/openai-server.js';

export const TEST_LIMITS: AgentLimits = { maxSteps: 8, maxContextTokens: 50_000, modelRetries: 2, maxRetryDelayMs: 30 };

/** A temp folder holding `ws/` (the workspace, seeded with `files`) and `outside/secret.txt`. */
export interface Harness {
  fake: FakeOpenAI;
  root: string;
  wsDir: string;
  outsideDir: string;
  tools: Tool[];
  run(text: string, opts?: RunOptions): Promise<{ outcome: RunOutcome; events: AgentEvent[] }>;
  close(): Promise<void>;
}

export interface RunOptions {
  stream?: boolean;
  limits?: Partial<AgentLimits>;
  signal?: AbortSignal;
  history?: ChatMessage[];
  timeoutMs?: number;
  journal?: StepJournal;
  suspend?: AbortSignal;
  budget?: TokenAllowance;
  onEvent?: (e: AgentEvent) => void;
}

export async function startHarness(files: Record<string, string> = {}): Promise<Harness> {
  const fake = await startFakeOpenAI();
  const root = await mkdtemp(path.join(tmpdir(), 'sb-agent-'));
  const wsDir = path.join(root, 'ws');
  const outsideDir = path.join(root, 'outside');
  await mkdir(wsDir, { recursive: true });
  await mkdir(outsideDir, { recursive: true });
  await writeFile(path.join(outsideDir, 'secret.txt'), 'outside secret\n');
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(wsDir, name)), { recursive: true });
    await writeFile(path.join(wsDir, name), text);
  }
  const tools = buildTools(new Workspace(wsDir));
  return {
    fake,
    root,
    wsDir,
    outsideDir,
    tools,
    async run(text, opts = {}) {
      const events: AgentEvent[] = [];
      const model = createOpenAIModel({
        apiKey: 'sk-test',
        baseURL: fake.baseURL,
        model: 'fake-model',
        stream: opts.stream ?? false,
        timeoutMs: opts.timeoutMs ?? 5_000,
      });
      const outcome = await runAgent({
        model,
        tools,
        system: 'You are a test assistant.',
        history: opts.history ?? [],
        input: [{ role: 'user', content: text }],
        limits: { ...TEST_LIMITS, ...opts.limits },
        signal: opts.signal ?? new AbortController().signal,
        ...(opts.journal && { journal: opts.journal }),
        ...(opts.suspend && { suspend: opts.suspend }),
        ...(opts.budget && { budget: opts.budget }),
        onEvent: (e) => {
          events.push(e);
          opts.onEvent?.(e);
        },
      });
      return { outcome, events };
    },
    async close() {
      await fake.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

export function lastMessage(req: RecordedRequest | undefined): any {
  const messages = req?.body.messages as any[] | undefined;
  return messages?.[messages.length - 1];
}

export function toolMessages(req: RecordedRequest | undefined): any[] {
  return ((req?.body.messages as any[] | undefined) ?? []).filter((m) => m.role === 'tool');
}

export function eventsOf<T extends AgentEvent['type']>(events: AgentEvent[], type: T): Extract<AgentEvent, { type: T }>[] {
  return events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type);
}
