import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChatMessage } from '../../src/agent/types.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { spawnNode, spawnWorker, waitFor, type Spawned } from './processes.js';
import { dropPrefix, testRedis, uniquePrefix } from './redis.js';
import { productEnv } from './product-env.js';

/** A fake platform's hooks that stop a call before it takes effect, or its answer after it did. */
export interface Holds<C> {
  requests(hold: ((call: C) => number) | undefined): void;
  responses(hold: ((call: C) => number) | undefined): void;
}

/**
 * A gateway process and worker processes, one worker at a time, against a fake platform and a
 * model that answers at once (by default "answer to <the last user text>"): for killing a worker with SIGKILL
 * at one exact platform call and seeing what the next worker makes of it. Stops everything by pid.
 */
export class KillRig {
  private readonly workers: Spawned[] = [];

  private constructor(
    private readonly env: Record<string, string>,
    private readonly gateway: Spawned,
    private readonly model: FakeOpenAI,
    private readonly root: string,
  ) {}

  static async start(
    name: string,
    platformEnv: Record<string, string>,
    connected: () => boolean,
    answer: (userText: string) => string = (text) => `answer to ${text}`,
  ): Promise<KillRig> {
    const model = await startFakeOpenAI();
    model.setHandler((req) => {
      const users = (req.body.messages as ChatMessage[]).filter((m) => m.role === 'user');
      return { content: answer(String(users.at(-1)?.content)) };
    });
    const root = await mkdtemp(join(tmpdir(), `sb-${name}-`));
    const env = productEnv(
      { prefix: uniquePrefix(name), modelUrl: model.baseURL, root },
      {
        GROUP_POLICY: 'open',
        STREAM_ANSWERS: '0',
        // A dead worker's run comes back in about 3 s.
        LOCK_DURATION_MS: '2000',
        STALLED_INTERVAL_MS: '1000',
        RECONCILE_INTERVAL_MS: '3600000',
        ...platformEnv,
      },
    );
    const gateway = spawnNode('src/cli/main.ts', ['gateway'], env);
    await waitFor('the gateway to connect', () => connected() || (gateway.child.exitCode !== null && Promise.reject(new Error(gateway.stderr()))), 60_000);
    return new KillRig(env, gateway, model, root);
  }

  /**
   * Starts a worker, sends the message, SIGKILLs the worker the first time `when` matches a call
   * (held before it takes effect, or after it did and before its answer), starts the next worker
   * and waits until `answered`, then a little longer for anything still under way.
   */
  async killAt<C>(holds: Holds<C>, at: 'request' | 'response', when: (call: C) => boolean, send: () => void, answered: () => boolean): Promise<void> {
    const doomed = await this.start();
    let struck = false;
    const strike = (call: C) => {
      if (struck || !when(call)) return 0;
      struck = true;
      doomed.kill('SIGKILL');
      return 1_000;
    };
    holds[at === 'request' ? 'requests' : 'responses'](strike);
    try {
      send();
      await waitFor('the strike', () => struck, 30_000);
      await doomed.exited;
    } finally {
      holds.requests(undefined);
      holds.responses(undefined);
    }
    const heir = await this.start();
    await waitFor('the answer', answered, 30_000);
    // A second copy or a repeated edit, if any, has had time to land.
    await new Promise((r) => setTimeout(r, 1_500));
    // One worker at a time: the next strike must land on its own doomed worker.
    heir.kill('SIGTERM');
    await heir.exited;
  }

  async close(): Promise<void> {
    for (const w of this.workers) {
      w.kill('SIGKILL');
      await w.exited;
    }
    this.gateway.kill('SIGTERM');
    await this.gateway.exited;
    await this.model.close();
    const redis = testRedis();
    await dropPrefix(redis, this.env.QUEUE_PREFIX!);
    redis.disconnect();
    await rm(this.root, { recursive: true, force: true });
  }

  private async start(): Promise<Spawned> {
    const w = await spawnWorker(this.env);
    this.workers.push(w);
    return w;
  }
}
