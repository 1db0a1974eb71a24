import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/doctor/run.js';
import type { CheckResult } from '../../src/doctor/types.js';
import { checkExecRuntime } from '../../src/tools/exec.js';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discord-server.js';
import { stdioEntry, writeMcpConfig } from '../fakes/mcp-harness.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { APP_TOKEN, BOT_TOKEN as SLACK_BOT_TOKEN, REQUIRED_SCOPES, startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { startFakeTelegram, TOKEN as TELEGRAM_TOKEN, type FakeTelegram } from '../fakes/telegram-server.js';
import { freePort } from '../helpers/ports.js';
import { spawnNode, waitFor } from '../helpers/processes.js';
import { REDIS_URL } from '../helpers/redis.js';

const API_KEY = 'sk-doctor-test-key-0123456789';

let openai: FakeOpenAI;
let slack: FakeSlack;
let telegram: FakeTelegram;
let discord: FakeDiscord;
let dir: string;
let mcpConfig: string;
let bwrapWorks = false;

beforeAll(async () => {
  [openai, slack, telegram, discord] = await Promise.all([
    startFakeOpenAI({ apiKey: API_KEY, models: ['fake-model', 'fake-model-large', 'other-model'] }),
    startFakeSlack({ scopes: [...REQUIRED_SCOPES, 'users:read'] }),
    startFakeTelegram(),
    startFakeDiscord(),
  ]);
  dir = await mkdtemp(path.join(tmpdir(), 'switchboard-doctor-'));
  mcpConfig = await writeMcpConfig(dir, { fake: stdioEntry() });
  bwrapWorks = (await checkExecRuntime({ sandbox: 'bwrap', network: false, maxTimeoutS: 10 })).ok;
});

afterAll(async () => {
  await Promise.all([openai?.close(), slack?.close(), telegram?.close(), discord?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A configuration every fake is happy with. */
function goodEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    LOG_LEVEL: 'silent',
    REDIS_URL,
    OPENAI_BASE_URL: openai.baseURL,
    OPENAI_API_KEY: API_KEY,
    AGENT_MODEL: 'fake-model',
    WORKSPACE_ROOT: path.join(dir, 'workspaces'),
    SLACK_BOT_TOKEN,
    SLACK_APP_TOKEN: APP_TOKEN,
    SLACK_API_URL: slack.apiUrl,
    TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    ...discord.env(),
    MCP_CONFIG: mcpConfig,
    ...(bwrapWorks && { TOOLS_EXEC: 'on', EXEC_SANDBOX: 'bwrap' }),
    ...extra,
  };
}

const byName = (results: CheckResult[], name: string) => {
  const found = results.filter((r) => r.name === name);
  if (found.length === 0) throw new Error(`no check ${name} in ${results.map((r) => r.name).join(', ')}`);
  return found[0]!;
};

const failures = (results: CheckResult[]) => results.filter((r) => r.status === 'fail').map((r) => r.name);

describe('npm run doctor (the CLI)', () => {
  it('passes a fully good configuration: every check ✓, exit 0, no secret printed', async () => {
    openai.setHandler(() => ({ toolCalls: [{ name: 'report_ready', arguments: '{"ready":true}' }] }));
    const child = spawnNode('src/cli/doctor.ts', ['--probe'], goodEnv());
    const code = await child.exited;
    const out = child.stdout();
    expect(code, `${out}\n${child.stderr()}`).toBe(0);
    const rows = out
      .split('\n')
      .slice(1)
      .filter((l) => /^\S.*  [✓✗–]  /.test(l));
    expect(rows.length).toBeGreaterThanOrEqual(15);
    for (const row of rows) expect(row, out).toMatch(/^\S[^✗–]*  ✓  /);
    for (const name of [
      'config',
      'redis',
      'redis maxmemory-policy',
      'model endpoint',
      'model tool calling',
      'slack tokens',
      'slack auth.test',
      'slack scopes',
      'telegram getMe',
      'telegram webhook',
      'telegram privacy',
      'discord token',
      'discord application',
      'discord message content',
      'workspace',
      'mcp fake',
    ]) {
      expect(out).toMatch(new RegExp(`^${name.replace('.', '\\.')} +✓`, 'm'));
    }
    if (bwrapWorks) expect(out).toMatch(/^run_command sandbox +✓/m);
    expect(out).not.toContain('\x1b[');
    for (const secret of [API_KEY, SLACK_BOT_TOKEN, APP_TOKEN, TELEGRAM_TOKEN, discord.token]) expect(out).not.toContain(secret);
    // The probe sent one chat completion with one tool that had to be called.
    const probe = openai.requests.at(-1)!;
    expect(probe.body.tool_choice).toBe('required');
    expect(probe.body.tools).toHaveLength(1);
  }, 60_000);

  it('exits 1 on a config error, one ✗ per bad variable', async () => {
    const child = spawnNode('src/cli/doctor.ts', [], { AGENT_MAX_STEPS: 'abc', GROUP_POLICY: 'nobody' });
    expect(await child.exited).toBe(1);
    const out = child.stdout();
    expect(out).toMatch(/^config +✗ +AGENT_MAX_STEPS must be a whole number from 1 to 500 \(got "abc"\)/m);
    expect(out).toMatch(/^config +✗ +GROUP_POLICY must be pairing, allowlist or open/m);
    expect(out).toMatch(/^everything else +– +not checked/m);
  }, 30_000);

  it('exits 1 when Redis does not answer', async () => {
    const port = await freePort();
    const child = spawnNode('src/cli/doctor.ts', [], {
      REDIS_URL: `redis://127.0.0.1:${port}`,
      OPENAI_BASE_URL: openai.baseURL,
      OPENAI_API_KEY: API_KEY,
      AGENT_MODEL: 'fake-model',
      WORKSPACE_ROOT: path.join(dir, 'ws2'),
    });
    expect(await child.exited).toBe(1);
    const out = child.stdout();
    expect(out).toMatch(new RegExp(`^redis +✗ +does not answer at redis://127\\.0\\.0\\.1:${port} .*start Redis`, 'm'));
    expect(out).toMatch(/^redis maxmemory-policy +– /m);
    expect(out).toMatch(/^model endpoint +✓/m);
  }, 30_000);
});

describe('doctor checks against platforms that refuse', () => {
  it('Slack: missing scopes listed from x-oauth-scopes', async () => {
    const partial = await startFakeSlack({ scopes: ['app_mentions:read', 'chat:write', 'commands', 'im:history'] });
    try {
      const results = await runDoctor(goodEnv({ SLACK_API_URL: partial.apiUrl, MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
      const scopes = byName(results, 'slack scopes');
      expect(scopes.status).toBe('fail');
      expect(scopes.found).toBe('missing channels:history, chat:write.public, files:read, files:write, groups:history, mpim:history, reactions:write');
      expect(scopes.fix).toContain('reinstall');
      expect(failures(results)).toEqual(['slack scopes']);
    } finally {
      await partial.close();
    }
  });

  it('Slack: invalid_auth and a bot token of the wrong shape', async () => {
    const results = await runDoctor(goodEnv({ SLACK_BOT_TOKEN: 'xoxp-a-user-token-0000', MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
    expect(byName(results, 'slack auth.test')).toMatchObject({ status: 'fail', found: 'Slack refused the bot token: invalid_auth' });
    expect(byName(results, 'slack tokens')).toMatchObject({ status: 'fail', found: 'SLACK_BOT_TOKEN xoxp… does not start with xoxb-' });
    expect(byName(results, 'slack scopes').status).toBe('skip');
    expect(JSON.stringify(results)).not.toContain('a-user-token');
  });

  it('Telegram: a webhook set while we poll', async () => {
    const res = await fetch(`${telegram.apiRoot}/bot${TELEGRAM_TOKEN}/setWebhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://old-deployment.example/telegram/webhook' }),
    });
    expect(res.status).toBe(200);
    try {
      const results = await runDoctor(goodEnv({ MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
      const hook = byName(results, 'telegram webhook');
      expect(hook.status).toBe('fail');
      expect(hook.found).toContain('a webhook is set (https://old-deployment.example) while we poll; 0 pending update(s)');
      expect(hook.fix).toContain('deleteWebhook or set TELEGRAM_WEBHOOK_URL');
      expect(byName(results, 'telegram privacy')).toMatchObject({ status: 'ok' });
      expect(byName(results, 'telegram privacy').found).toContain('privacy mode on');
      expect(failures(results)).toEqual(['telegram webhook']);
      // With TELEGRAM_WEBHOOK_URL pointing there, the same webhook is right.
      const webhookMode = await runDoctor(
        goodEnv({ MCP_CONFIG: '', TOOLS_EXEC: 'off', TELEGRAM_WEBHOOK_URL: 'https://old-deployment.example/telegram/webhook' }),
      );
      expect(byName(webhookMode, 'telegram webhook').status).toBe('ok');
    } finally {
      await fetch(`${telegram.apiRoot}/bot${TELEGRAM_TOKEN}/deleteWebhook`, { method: 'POST' });
    }
  });

  it('Telegram: a token it refuses', async () => {
    const results = await runDoctor(goodEnv({ TELEGRAM_BOT_TOKEN: '123:not-the-token', MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
    expect(byName(results, 'telegram getMe')).toMatchObject({ status: 'fail' });
    expect(byName(results, 'telegram getMe').found).toContain('401');
    expect(JSON.stringify(results)).not.toContain('not-the-token');
  });

  it('Discord: application id mismatch', async () => {
    const results = await runDoctor(goodEnv({ DISCORD_APPLICATION_ID: '100000000000000001', MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
    const app = byName(results, 'discord application');
    expect(app.status).toBe('fail');
    expect(app.found).toBe(`the token belongs to application ${discord.ids.app}, not DISCORD_APPLICATION_ID 100000000000000001`);
    expect(app.fix).toContain(`DISCORD_APPLICATION_ID=${discord.ids.app}`);
    expect(failures(results)).toEqual(['discord application']);
  });

  it('Discord: the Message Content intent off in the portal (and fine in mention-only mode)', async () => {
    const noContent = await startFakeDiscord({ messageContentAllowed: false });
    try {
      const results = await runDoctor(goodEnv({ ...noContent.env(), MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
      expect(byName(results, 'discord message content')).toMatchObject({ status: 'fail' });
      expect(byName(results, 'discord message content').fix).toContain('DISCORD_MESSAGE_CONTENT=0');
      expect(failures(results)).toEqual(['discord message content']);
      const mentionOnly = await runDoctor(goodEnv({ ...noContent.env(), DISCORD_MESSAGE_CONTENT: '0', MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
      expect(byName(mentionOnly, 'discord message content').status).toBe('skip');
      expect(failures(mentionOnly)).toEqual([]);
    } finally {
      await noContent.close();
    }
  });

  it('Discord: a token it refuses', async () => {
    const results = await runDoctor(goodEnv({ DISCORD_TOKEN: 'wrong-discord-token', MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
    expect(byName(results, 'discord token')).toMatchObject({ status: 'fail', found: 'Discord refused the token (401 Unauthorized)' });
  });

  it('model: a refused key (401)', async () => {
    const results = await runDoctor(goodEnv({ OPENAI_API_KEY: 'sk-wrong-key-000000', MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
    const model = byName(results, 'model endpoint');
    expect(model.status).toBe('fail');
    expect(model.found).toContain('refused the key (401');
    expect(model.fix).toContain('OPENAI_API_KEY');
    expect(JSON.stringify(results)).not.toContain('sk-wrong-key-000000');
    expect(failures(results)).toEqual(['model endpoint']);
  });

  it('model: an AGENT_MODEL the endpoint does not serve, naming close ones', async () => {
    const results = await runDoctor(goodEnv({ AGENT_MODEL: 'fake-modle', MCP_CONFIG: '', TOOLS_EXEC: 'off' }));
    const model = byName(results, 'model endpoint');
    expect(model.status).toBe('fail');
    expect(model.found).toContain('AGENT_MODEL fake-modle is not among the 3 models');
    expect(model.fix).toMatch(/^set AGENT_MODEL to a served model, e\.g\. fake-model, /);
  });

  it('model --probe: an answer without a tool call, and a 400 on tools', async () => {
    openai.script([
      { content: 'I am ready!' },
      { status: 400, body: { error: { message: 'tools are not supported by this model', type: 'invalid_request_error', param: 'tools', code: null } } },
    ]);
    const env = goodEnv({ MCP_CONFIG: '', TOOLS_EXEC: 'off' });
    const noCall = byName(await runDoctor(env, { probe: true }), 'model tool calling');
    expect(noCall).toMatchObject({ status: 'fail', found: 'fake-model answered without a tool call although tool_choice was required' });
    const refused = byName(await runDoctor(env, { probe: true }), 'model tool calling');
    expect(refused.status).toBe('fail');
    expect(refused.found).toBe('fake-model refused a request with tools (400: tools are not supported by this model)');
    openai.assertDone();
  });

  it('Redis: maxmemory-policy other than noeviction', async () => {
    const port = await freePort();
    const server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'allkeys-lru'],
      { stdio: 'ignore' },
    );
    try {
      await waitFor('private redis-server', async () => {
        const [redis] = await runDoctorRedis(`redis://127.0.0.1:${port}`);
        return redis!.status === 'ok';
      });
      const [reachable, policy] = await runDoctorRedis(`redis://127.0.0.1:${port}`);
      expect(reachable!.found).toMatch(/Redis \d+\.\d+/);
      expect(policy).toMatchObject({ name: 'redis maxmemory-policy', status: 'fail' });
      expect(policy!.found).toContain('allkeys-lru');
      expect(policy!.fix).toContain('CONFIG SET maxmemory-policy noeviction');
    } finally {
      if (server.exitCode === null) process.kill(server.pid!, 'SIGTERM');
      await new Promise((resolve) => (server.exitCode !== null ? resolve(undefined) : server.once('exit', resolve)));
    }
  }, 30_000);

  it('MCP: a server that does not start', async () => {
    const broken = await writeMcpConfig(await mkdtemp(path.join(dir, 'mcp-')), { fake: stdioEntry(), gone: { command: path.join(dir, 'no-such-program') } });
    const results = await runDoctor(goodEnv({ MCP_CONFIG: broken, TOOLS_EXEC: 'off' }));
    expect(byName(results, 'mcp fake').status).toBe('ok');
    expect(byName(results, 'mcp fake').found).toMatch(/connected, \d+ tool\(s\)/);
    expect(byName(results, 'mcp gone').status).toBe('fail');
    expect(failures(results)).toEqual(['mcp gone']);
  }, 30_000);
});

describe('doctor local checks', () => {
  it('WORKSPACE_ROOT that cannot take a file', async () => {
    const { checkWorkspace } = await import('../../src/doctor/checks/local.js');
    const blocked = path.join(mcpConfig, 'workspaces'); // under a file: ENOTDIR, even as root
    expect(await checkWorkspace(blocked)).toMatchObject({ status: 'fail', found: `cannot write in ${blocked} (ENOTDIR)` });
    expect((await checkWorkspace(path.join(dir, 'ws3'))).status).toBe('ok');
  });

  it('EXEC_SANDBOX=bwrap without bwrap on the PATH (the CLI)', async () => {
    const child = spawnNode('src/cli/doctor.ts', [], {
      PATH: path.join(dir, 'empty-path'),
      TOOLS_EXEC: 'approve',
      OPENAI_BASE_URL: openai.baseURL,
      OPENAI_API_KEY: API_KEY,
      AGENT_MODEL: 'fake-model',
      WORKSPACE_ROOT: path.join(dir, 'ws4'),
    });
    expect(await child.exited).toBe(1);
    expect(child.stdout()).toMatch(/^run_command sandbox +✗ +EXEC_SANDBOX=bwrap needs bubblewrap, and bwrap is not on the PATH/m);
  }, 30_000);
});

async function runDoctorRedis(url: string): Promise<CheckResult[]> {
  const { checkRedis } = await import('../../src/doctor/checks/redis.js');
  return checkRedis(url, 1_000);
}
