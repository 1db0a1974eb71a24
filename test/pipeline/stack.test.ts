import { afterEach, describe, expect, it } from 'vitest';
import { startStack, type Stack, readyz } from '../helpers/stack.js';

describe('gateway and worker roles in one process', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('serves /healthz and reports readiness with the worker connected', async () => {
    stack = await startStack('stack', {});
    const health = await fetch(`${stack.baseUrl}/healthz`);
    expect(health.status).toBe(200);
    const ready = await readyz(stack);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ok: true, redis: 'ok', workers: 1, channels: {} });
    await stack.worker.close();
    const notReady = await readyz(stack);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({ ok: false, problems: ['no worker is connected to the queue'] });
  });
});
