import { isAbsolute, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseEnv } from '../../src/config/load.js';
import { DEFAULT_REDIS_URL, deriveConfig, requireModel } from '../../src/config/config.js';

const config = (env: Record<string, string>) => deriveConfig(parseEnv(env));

/** The ConfigError lines for an environment (fails the test when it parses). */
function errorLines(env: Record<string, string>): string[] {
  try {
    parseEnv(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const e = err as ConfigError;
    expect(e.message).toBe(e.lines.join('\n'));
    return e.lines;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

describe('defaults', () => {
  it('an empty environment gives the documented defaults', () => {
    const c = config({});
    expect(c.redis).toEqual({ url: 'redis://127.0.0.1:6379', explicit: false });
    expect(DEFAULT_REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(c.port).toBe(3000);
    expect(c.agent.limits.maxSteps).toBe(20);
    expect(c.queue.prefix).toBe('{switchboard}');
    expect(c.queue.name).toBe('runs');
    expect(c.queue.concurrency).toBe(8);
    expect(c.queue.lockDurationMs).toBe(30_000);
    expect(c.queue.stalledIntervalMs).toBe(15_000);
    expect(c.queue.foldMax).toBe(10);
    expect(c.logLevel).toBe('info');
    expect(c.adminToken).toBeUndefined();
    // STREAM_ANSWERS is on by default, and a streamed answer needs a streamed call.
    expect(c.model).toEqual({
      apiKey: undefined,
      baseURL: undefined,
      name: 'gpt-4.1-mini',
      stream: true,
      timeoutMs: 120_000,
      vision: { enabled: false, imageMaxBytes: 5_000_000 },
    });
    expect(c.streamAnswers).toBe(true);
    expect(c.channels).toEqual({});
    expect(c.agent.runTimeoutMs).toBe(900_000);
    expect(c.agent.toolTimeoutMs).toBe(60_000);
    expect(c.shutdownGraceMs).toBe(30_000);
    expect(c.exec).toEqual({ mode: 'off', sandbox: 'bwrap', network: false, maxTimeoutS: 600 });
  });

  it('commands: TOOLS_EXEC, EXEC_SANDBOX, EXEC_NETWORK and EXEC_MAX_TIMEOUT_S', () => {
    expect(config({ TOOLS_EXEC: 'approve' }).exec).toEqual({ mode: 'approve', sandbox: 'bwrap', network: false, maxTimeoutS: 600 });
    expect(config({ TOOLS_EXEC: 'on', EXEC_SANDBOX: 'none', EXEC_NETWORK: '1', EXEC_MAX_TIMEOUT_S: '86400' }).exec).toEqual({
      mode: 'on',
      sandbox: 'none',
      network: true,
      maxTimeoutS: 86_400,
    });
    expect(config({ EXEC_MAX_TIMEOUT_S: '1', EXEC_NETWORK: 'no' }).exec).toMatchObject({ maxTimeoutS: 1, network: false });
  });

  it('the run and tool deadlines and the shutdown grace accept their smallest values', () => {
    const c = config({ AGENT_RUN_TIMEOUT_MS: '1000', TOOL_TIMEOUT_MS: '100', SHUTDOWN_GRACE_MS: '0' });
    expect(c.agent.runTimeoutMs).toBe(1000);
    expect(c.agent.toolTimeoutMs).toBe(100);
    expect(c.shutdownGraceMs).toBe(0);
  });

  it('WORKSPACE_ROOT is resolved to an absolute path', () => {
    const c = config({});
    expect(isAbsolute(c.workspaceRoot)).toBe(true);
    expect(c.workspaceRoot).toBe(resolve('data/workspaces'));
    expect(config({ WORKSPACE_ROOT: 'some/where/../ws' }).workspaceRoot).toBe(resolve('some/ws'));
    expect(config({ WORKSPACE_ROOT: '/srv/ws' }).workspaceRoot).toBe('/srv/ws');
  });

  it('an explicit REDIS_URL is marked explicit', () => {
    expect(config({ REDIS_URL: 'redis://127.0.0.1:6379' }).redis).toEqual({ url: 'redis://127.0.0.1:6379', explicit: true });
    expect(config({ REDIS_URL: 'rediss://user:pw@redis.example:6380/2' }).redis).toEqual({ url: 'rediss://user:pw@redis.example:6380/2', explicit: true });
  });

  it('values are read and converted', () => {
    const c = config({
      PORT: '8080',
      AGENT_MAX_STEPS: '7',
      WORKER_CONCURRENCY: '2',
      MODEL_STREAM: 'yes',
      LOG_LEVEL: 'debug',
      QUEUE_PREFIX: '{sb-prod}',
      ADMIN_TOKEN: 'a-long-enough-token',
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1',
      AGENT_MODEL: 'llama3.2',
    });
    expect(c.port).toBe(8080);
    expect(c.agent.limits.maxSteps).toBe(7);
    expect(c.queue.concurrency).toBe(2);
    expect(c.model).toMatchObject({ stream: true, apiKey: 'sk-test', baseURL: 'http://127.0.0.1:11434/v1', name: 'llama3.2' });
    expect(c.logLevel).toBe('debug');
    expect(c.queue.prefix).toBe('{sb-prod}');
    expect(c.adminToken).toBe('a-long-enough-token');
  });

  it.each([
    ['1', true],
    ['true', true],
    ['on', true],
    ['0', false],
    ['false', false],
    ['off', false],
    ['no', false],
  ])('MODEL_STREAM=%s is %s (with STREAM_ANSWERS=0)', (value, expected) => {
    expect(config({ MODEL_STREAM: value, STREAM_ANSWERS: '0' }).model.stream).toBe(expected);
  });

  it('STREAM_ANSWERS, MODEL_VISION and IMAGE_MAX_BYTES', () => {
    expect(config({ STREAM_ANSWERS: '0' })).toMatchObject({ streamAnswers: false, model: { stream: false } });
    expect(config({ MODEL_VISION: '1', IMAGE_MAX_BYTES: '2000000' }).model.vision).toEqual({ enabled: true, imageMaxBytes: 2_000_000 });
    expect(() => config({ IMAGE_MAX_BYTES: '10' })).toThrow(/IMAGE_MAX_BYTES/);
  });

  it('an empty string counts as unset', () => {
    const c = config({
      REDIS_URL: '',
      PORT: '',
      AGENT_MAX_STEPS: '',
      QUEUE_PREFIX: '',
      OPENAI_API_KEY: '',
      LOG_LEVEL: '',
      ADMIN_TOKEN: '',
      SLACK_BOT_TOKEN: '',
    });
    expect(c.redis).toEqual({ url: 'redis://127.0.0.1:6379', explicit: false });
    expect(c.port).toBe(3000);
    expect(c.agent.limits.maxSteps).toBe(20);
    expect(c.queue.prefix).toBe('{switchboard}');
    expect(c.model.apiKey).toBeUndefined();
    expect(c.logLevel).toBe('info');
    expect(c.adminToken).toBeUndefined();
    expect(c.channels).toEqual({});
  });

  it('configured channels appear in the config', () => {
    const c = config({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's', DISCORD_TOKEN: 'd', DISCORD_APPLICATION_ID: '123', TELEGRAM_BOT_TOKEN: '1:abc' });
    expect(Object.keys(c.channels).sort()).toEqual(['discord', 'slack', 'telegram']);
    expect(c.channels.slack).toMatchObject({ botToken: 'xoxb-1', signingSecret: 's', appToken: undefined, apiUrl: undefined });
    expect(c.channels.discord).toMatchObject({ token: 'd', applicationId: '123', apiUrl: undefined });
    expect(c.channels.telegram).toMatchObject({ token: '1:abc', apiRoot: undefined });
  });
});

describe('one clear line per wrong value', () => {
  const CASES: Array<[Record<string, string>, string, RegExp]> = [
    [
      { REDIS_URL: 'http://x' },
      'REDIS_URL',
      /must start with redis:\/\/, rediss:\/\/ or redis\+cluster:\/\/ \(a seed node of a Redis Cluster\) \(got "http:\/\/x"\)$/,
    ],
    [
      { REDIS_URL: 'notaurl' },
      'REDIS_URL',
      /must be a Redis URL such as redis:\/\/127\.0\.0\.1:6379 \(an absolute URL such as http:\/\/host:port\) \(got "notaurl"\)$/,
    ],
    [
      { OPENAI_BASE_URL: 'nope' },
      'OPENAI_BASE_URL',
      /must be an OpenAI-compatible \/v1 base URL \(an absolute URL such as http:\/\/host:port\) \(got "nope"\)$/,
    ],
    [{ PORT: 'abc' }, 'PORT', /must be a whole number from 0 to 65535 \(got "abc"\)$/],
    [{ PORT: '70000' }, 'PORT', /must be a whole number from 0 to 65535 \(got "70000"\)$/],
    [{ AGENT_MAX_STEPS: '0' }, 'AGENT_MAX_STEPS', /must be a whole number from 1 to 500 \(got "0"\)$/],
    [{ AGENT_MAX_STEPS: 'abc' }, 'AGENT_MAX_STEPS', /must be a whole number from 1 to 500 \(got "abc"\)$/],
    [{ WORKER_CONCURRENCY: '-1' }, 'WORKER_CONCURRENCY', /must be a whole number from 1 to 1000 \(got "-1"\)$/],
    [{ AGENT_RUN_TIMEOUT_MS: '999' }, 'AGENT_RUN_TIMEOUT_MS', /must be a whole number from 1000 to 86400000 \(got "999"\)$/],
    [{ AGENT_RUN_TIMEOUT_MS: '15m' }, 'AGENT_RUN_TIMEOUT_MS', /must be a whole number from 1000 to 86400000 \(got "15m"\)$/],
    [{ TOOL_TIMEOUT_MS: '99' }, 'TOOL_TIMEOUT_MS', /must be a whole number from 100 to 3600000 \(got "99"\)$/],
    [{ TOOL_TIMEOUT_MS: '1.5' }, 'TOOL_TIMEOUT_MS', /must be a whole number from 100 to 3600000 \(got "1\.5"\)$/],
    [{ SHUTDOWN_GRACE_MS: '-1' }, 'SHUTDOWN_GRACE_MS', /must be a whole number from 0 to 3600000 \(got "-1"\)$/],
    [{ SHUTDOWN_GRACE_MS: '4000000' }, 'SHUTDOWN_GRACE_MS', /must be a whole number from 0 to 3600000 \(got "4000000"\)$/],
    [{ MODEL_STREAM: 'maybe' }, 'MODEL_STREAM', /must be 1 or 0 \(true\/false\) \(got "maybe"\)$/],
    [{ TOOLS_EXEC: 'yes' }, 'TOOLS_EXEC', /must be off, approve or on \(got "yes"\)$/],
    [{ EXEC_SANDBOX: 'docker' }, 'EXEC_SANDBOX', /must be bwrap or none \(no sandbox: commands run on the host\) \(got "docker"\)$/],
    [{ EXEC_NETWORK: 'maybe' }, 'EXEC_NETWORK', /must be 1 or 0 \(true\/false\) \(got "maybe"\)$/],
    [{ EXEC_MAX_TIMEOUT_S: '0' }, 'EXEC_MAX_TIMEOUT_S', /must be a whole number from 1 to 86400 \(got "0"\)$/],
    [{ EXEC_MAX_TIMEOUT_S: '86401' }, 'EXEC_MAX_TIMEOUT_S', /must be a whole number from 1 to 86400 \(got "86401"\)$/],
    [{ EXEC_MAX_TIMEOUT_S: '10m' }, 'EXEC_MAX_TIMEOUT_S', /must be a whole number from 1 to 86400 \(got "10m"\)$/],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL', /must be one of fatal, error, warn, info, debug, trace, silent \(got "loud"\)$/],
    [{ QUEUE_PREFIX: 'switchboard' }, 'QUEUE_PREFIX', /must be a Redis hash tag such as \{switchboard\}.* \(got "switchboard"\)$/],
    [{ ADMIN_TOKEN: 'short' }, 'ADMIN_TOKEN', /must be at least 12 characters \(got "…"\)$/],
    [{ SLACK_BOT_TOKEN: 'xoxb-123' }, 'SLACK_SIGNING_SECRET', /is required when SLACK_BOT_TOKEN is set/],
    [{ DISCORD_TOKEN: 'discord-token' }, 'DISCORD_APPLICATION_ID', /is required when DISCORD_TOKEN is set/],
    [{ DISCORD_APPLICATION_ID: '123' }, 'DISCORD_TOKEN', /is required when DISCORD_APPLICATION_ID is set/],
    [{ SLACK_APP_TOKEN: 'xapp-1' }, 'SLACK_BOT_TOKEN', /is required when SLACK_APP_TOKEN is set/],
    [{ LOCK_DURATION_MS: '5000', STALLED_INTERVAL_MS: '20000' }, 'LOCK_DURATION_MS', /must be more than half of STALLED_INTERVAL_MS \(got "5000"\)$/],
    [{ LOCK_DURATION_MS: '1000' }, 'LOCK_DURATION_MS', /must be more than half of STALLED_INTERVAL_MS/],
  ];

  it.each(CASES.map(([env, name, re]) => [JSON.stringify(env), env, name, re] as const))('%s', (_, env, name, re) => {
    const lines = errorLines(env);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.startsWith(`config: ${name} `)).toBe(true);
    expect(lines[0]).toMatch(re);
  });

  it('several wrong values give one line each, in the schema order', () => {
    const lines = errorLines({ PORT: 'abc', AGENT_MAX_STEPS: '0', LOG_LEVEL: 'loud', REDIS_URL: 'notaurl', MODEL_STREAM: 'maybe', QUEUE_PREFIX: 'sb' });
    expect(lines.map((l) => l.split(' ')[1])).toEqual(['REDIS_URL', 'MODEL_STREAM', 'PORT', 'LOG_LEVEL', 'QUEUE_PREFIX', 'AGENT_MAX_STEPS']);
    for (const l of lines) expect(l.startsWith('config: ')).toBe(true);
  });

  it('wrong values and a missing companion variable are reported together', () => {
    const lines = errorLines({ PORT: 'abc', WORKER_CONCURRENCY: '0', REDIS_URL: 'http://x', SLACK_BOT_TOKEN: 'xoxb-1', DISCORD_TOKEN: 'd' });
    expect(lines.map((l) => l.split(' ')[1])).toEqual(['REDIS_URL', 'PORT', 'WORKER_CONCURRENCY', 'SLACK_SIGNING_SECRET', 'DISCORD_APPLICATION_ID']);
  });

  it('secret values are never echoed', () => {
    const secrets = {
      OPENAI_API_KEY: 'sk-live-VERYSECRET-0001',
      ADMIN_TOKEN: 'tooshort99',
      TELEGRAM_BOT_TOKEN: '123456:SECRET-TELEGRAM',
      SLACK_BOT_TOKEN: 'xoxb-SECRET-SLACK',
      DISCORD_TOKEN: 'SECRET.DISCORD.TOKEN',
    };
    const lines = errorLines({
      ...secrets,
      PORT: 'abc',
      OPENAI_BASE_URL: 'nope',
      REDIS_URL: 'http://default:hunter2-redis-pw@redis.example:6379',
    });
    expect(lines.map((l) => l.split(' ')[1]).sort()).toEqual([
      'ADMIN_TOKEN',
      'DISCORD_APPLICATION_ID',
      'OPENAI_BASE_URL',
      'PORT',
      'REDIS_URL',
      'SLACK_SIGNING_SECRET',
    ]);
    const all = lines.join('\n');
    for (const value of Object.values(secrets)) expect(all).not.toContain(value);
    expect(all).not.toContain('hunter2');
    expect(lines.find((l) => l.startsWith('config: REDIS_URL'))).toBe(
      'config: REDIS_URL must start with redis://, rediss:// or redis+cluster:// (a seed node of a Redis Cluster) (got "http://…@redis.example:6379")',
    );
  });

  it('a blank (whitespace-only) key is a wrong value, and its value is not shown', () => {
    const lines = errorLines({ OPENAI_API_KEY: '   ' });
    expect(lines).toEqual(['config: OPENAI_API_KEY must be an API key (got "…")']);
  });
});

describe('requireModel', () => {
  it('without a key or a base URL it names OPENAI_API_KEY', () => {
    const c = config({});
    expect(() => requireModel(c)).toThrow(ConfigError);
    try {
      requireModel(c);
    } catch (err) {
      const lines = (err as ConfigError).lines;
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^config: OPENAI_API_KEY is required to run the agent/);
      expect(lines[0]).toContain('OPENAI_BASE_URL');
    }
  });

  it('an empty key is no key', () => {
    expect(() => requireModel(config({ OPENAI_API_KEY: '' }))).toThrow(/OPENAI_API_KEY is required/);
  });

  it('a base URL alone is enough (local servers need no key)', () => {
    const m = requireModel(config({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1', AGENT_MODEL: 'llama3.2' }));
    expect(m).toMatchObject({ baseURL: 'http://127.0.0.1:11434/v1', name: 'llama3.2' });
    expect(typeof m.apiKey).toBe('string');
    expect(m.apiKey.length).toBeGreaterThan(0);
  });

  it('a key is passed through', () => {
    const m = requireModel(config({ OPENAI_API_KEY: 'sk-test-1' }));
    expect(m.apiKey).toBe('sk-test-1');
    expect(m.baseURL).toBeUndefined();
  });
});
