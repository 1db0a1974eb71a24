import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { writeMcpConfig } from '../fakes/mcp-harness.js';

const ADMIN_TOKEN = 'mcp-ready-admin-token';

describe('/readyz and an MCP server that does not start', () => {
  let stack: Stack;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-mcp-ready-'));
    const config = await writeMcpConfig(dir, { tracker: { command: join(dir, 'no-such-server') } });
    stack = await startStack('mcp-ready', { MCP_CONFIG: config, ADMIN_TOKEN });
  });
  afterAll(async () => {
    await stack.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the worker still starts; readiness names the server and the worker that cannot reach it', async () => {
    // The reasons are for operators (an anonymous caller gets the bare status: test/security/readyz.test.ts).
    const res = await fetch(`${stack.baseUrl}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { problems: string[]; workers: number };
    expect(body.workers).toBe(1);
    expect(body.problems).toEqual([expect.stringMatching(/^mcp server tracker: not connected on 1 worker\(s\)/)]);
  });

  it('/status names it too', async () => {
    const message = {
      v: 1 as const,
      id: 'm1',
      platform: 'terminal',
      conversation: 'someone',
      sender: { id: 'me' },
      text: '/status',
      attachments: [],
      eventId: 'e1',
      receivedAt: Date.now(),
    };
    const result = await stack.gateway.intake.accept(message);
    expect(result.kind === 'command' && result.reply).toMatch(/Tools unavailable: mcp server tracker: not connected on 1 worker\(s\)/);
  });
});
