import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort as closedPort } from '../helpers/ports.js';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnNode, type Spawned } from '../helpers/processes.js';
import { dropPrefix, REDIS_URL, testRedis, uniquePrefix } from '../helpers/redis.js';

const started: Spawned[] = [];

/** Runs the real entry point and returns its exit code and stderr lines. */
async function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; lines: string[]; stderr: string; stdout: string }> {
  const p = spawnNode('src/cli/main.ts', args, env);
  started.push(p);
  const code = await p.exited;
  return {
    code,
    lines: p
      .stderr()
      .split('\n')
      .filter((l) => l !== ''),
    stderr: p.stderr(),
    stdout: p.stdout(),
  };
}

afterAll(() => {
  for (const p of started) p.kill('SIGKILL');
});

describe('start-up of the real entry point', () => {
  it.each([['worker'], ['all'], ['gateway']])('%s: a wrong AGENT_MAX_STEPS exits 1 with exactly one line naming it', async (role) => {
    const r = await run([role], { AGENT_MAX_STEPS: 'abc' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('config: AGENT_MAX_STEPS must be a whole number from 1 to 500 (got "abc")\n');
    expect(r.stdout).toBe('');
  });

  it('several wrong values: one line each, nothing else', async () => {
    const r = await run(['worker'], { AGENT_MAX_STEPS: 'abc', PORT: '70000', OPENAI_API_KEY: 'sk-do-not-print-me' });
    expect(r.code).toBe(1);
    expect(r.lines).toEqual([
      'config: PORT must be a whole number from 0 to 65535 (got "70000")',
      'config: AGENT_MAX_STEPS must be a whole number from 1 to 500 (got "abc")',
    ]);
    expect(r.stderr).not.toContain('sk-do-not-print-me');
  });

  it('a worker with TOOLS_EXEC on and no bwrap on the PATH refuses to start with one line saying what to do', async () => {
    const prefix = uniquePrefix('startup-exec');
    const redis = testRedis();
    try {
      const r = await run(['worker'], { REDIS_URL, QUEUE_PREFIX: prefix, OPENAI_API_KEY: 'x', TOOLS_EXEC: 'on', PATH: '/nonexistent' });
      expect(r.code).toBe(1);
      expect(r.lines).toHaveLength(1);
      expect(r.lines[0]).toMatch(/^config: TOOLS_EXEC=on: .*bubblewrap.*EXEC_SANDBOX=none/);
    } finally {
      await dropPrefix(redis, prefix);
      redis.disconnect();
    }
  });

  it('a worker with a wrong MCP_CONFIG file refuses to start with one line naming the server and the field', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-mcp-config-'));
    try {
      const file = join(dir, 'mcp.json');
      await writeFile(file, JSON.stringify({ mcpServers: { fs: { command: 'npx', args: 'not-a-list' } } }));
      const r = await run(['worker'], { REDIS_URL, QUEUE_PREFIX: uniquePrefix('startup-mcp'), OPENAI_API_KEY: 'x', MCP_CONFIG: file });
      expect(r.code).toBe(1);
      expect(r.lines).toEqual([expect.stringMatching(/^MCP_CONFIG .*mcp\.json: server "fs": args /)]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each([['worker'], ['gateway']])('%s: an AGENTS_CONFIG with two equally specific bindings refuses to start with one line naming both', async (role) => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-agents-tie-'));
    try {
      const file = join(dir, 'agents.yaml');
      await writeFile(
        file,
        'agents: [{name: a}, {name: b}, {name: default}]\nbindings:\n  - {platform: slack, channel: C1, agent: a}\n  - {platform: slack, user: U1, agent: b}\n',
      );
      const r = await run([role], { REDIS_URL, QUEUE_PREFIX: uniquePrefix('startup-agents'), OPENAI_API_KEY: 'x', AGENTS_CONFIG: file });
      expect(r.code).toBe(1);
      expect(r.lines).toEqual([
        expect.stringMatching(
          /^config: AGENTS_CONFIG \(.*agents\.yaml\): bindings\[0\] \(agent "a"\) and bindings\[1\] \(agent "b"\) are equally specific and both match a message with platform slack, channel C1, user U1/,
        ),
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a worker without OPENAI_API_KEY or OPENAI_BASE_URL exits 1 naming OPENAI_API_KEY', async () => {
    const prefix = uniquePrefix('startup');
    const redis = testRedis();
    try {
      const r = await run(['worker'], { REDIS_URL, QUEUE_PREFIX: prefix });
      expect(r.code).toBe(1);
      expect(r.lines).toHaveLength(1);
      expect(r.lines[0]).toMatch(/^config: OPENAI_API_KEY is required to run the agent \(or set OPENAI_BASE_URL/);
      // It stopped before touching the queue.
      expect(await redis.keys(`${prefix.replace(/[{}]/g, '\\$&')}*`)).toEqual([]);
    } finally {
      await dropPrefix(redis, prefix);
      redis.disconnect();
    }
  });

  it.each([['worker'], ['all']])('%s: an explicit REDIS_URL that does not answer exits 1 saying so', async (role) => {
    const port = await closedPort();
    const r = await run([role], { REDIS_URL: `redis://127.0.0.1:${port}`, OPENAI_API_KEY: 'sk-test', QUEUE_PREFIX: uniquePrefix('startup') });
    expect(r.code).toBe(1);
    expect(r.lines).toEqual([`Redis does not answer at REDIS_URL (redis://127.0.0.1:${port}): start it or fix REDIS_URL`]);
  });

  it('an explicit REDIS_URL with a password does not print the password', async () => {
    const port = await closedPort();
    const r = await run(['worker'], { REDIS_URL: `redis://default:hunter2-pw@127.0.0.1:${port}`, OPENAI_API_KEY: 'sk-test' });
    expect(r.code).toBe(1);
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toContain('Redis does not answer at REDIS_URL');
    expect(r.stderr).not.toContain('hunter2-pw');
  });

  it('an unknown role exits 1 with a usage line', async () => {
    const r = await run(['bogus'], {});
    expect(r.code).toBe(1);
    expect(r.lines).toEqual(['usage: main.ts [all|gateway|worker] (got "bogus")']);
  });
});
