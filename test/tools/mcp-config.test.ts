import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/lib/config-error.js';
import { loadMcpConfig, type McpHttpServer, type McpStdioServer } from '../../src/tools/mcp/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'switchboard-mcp-config-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let n = 0;
async function fileWith(content: unknown): Promise<string> {
  const file = path.join(dir, `mcp-${++n}.json`);
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

/** The one line loading `content` fails with, without the "MCP_CONFIG <path>: " head. */
async function errorOf(content: unknown, env: Record<string, string> = {}): Promise<string> {
  const file = await fileWith(content);
  try {
    loadMcpConfig(file, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).not.toContain('\n');
    expect(message.startsWith(`MCP_CONFIG ${file}: `)).toBe(true);
    return message.slice(`MCP_CONFIG ${file}: `.length);
  }
  throw new Error('expected an error');
}

const servers = (entries: Record<string, unknown>) => ({ mcpServers: entries });

describe('loadMcpConfig', () => {
  it('reads stdio and HTTP servers side by side, with defaults', async () => {
    const file = await fileWith({
      globalShortcut: 'ignored: other clients keep their own keys at the top',
      mcpServers: {
        fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/data'] },
        tracker: { url: 'https://mcp.example.com/mcp', headers: { 'X-Team': 'core' } },
      },
    });
    const config = loadMcpConfig(file, {});
    expect(config.path).toBe(file);
    expect(config.servers).toEqual([
      {
        name: 'fs',
        kind: 'stdio',
        command: 'npx',
        args: ['-y', '@modelcontextprotocol/server-filesystem', '/data'],
        env: {},
        tools: { include: undefined, exclude: undefined },
        approve: false,
        timeoutMs: undefined,
        platforms: undefined,
        secrets: [],
      },
      {
        name: 'tracker',
        kind: 'http',
        url: 'https://mcp.example.com/mcp',
        headers: { 'X-Team': 'core' },
        transport: 'auto',
        tools: { include: undefined, exclude: undefined },
        approve: false,
        timeoutMs: undefined,
        platforms: undefined,
        secrets: [],
      },
    ]);
  });

  it("reads Switchboard's own keys", async () => {
    const file = await fileWith(
      servers({
        fs: {
          command: 'node',
          args: ['server.js'],
          cwd: 'servers/fs',
          tools: { include: ['read', 'write'], exclude: ['write'] },
          approve: ['write'],
          timeoutMs: 5000,
          platforms: ['slack', 'terminal'],
        },
        legacy: { url: 'http://127.0.0.1:9000/sse', transport: 'sse', approve: true },
        claude: { type: 'sse', url: 'http://127.0.0.1:9001/sse' },
        strict: { type: 'http', url: 'http://127.0.0.1:9002/mcp', transport: 'streamable-http' },
      }),
    );
    const [fs, legacy, claude, strict] = loadMcpConfig(file, {}).servers as [McpStdioServer, McpHttpServer, McpHttpServer, McpHttpServer];
    expect(fs).toMatchObject({
      tools: { include: ['read', 'write'], exclude: ['write'] },
      approve: ['write'],
      timeoutMs: 5000,
      platforms: ['slack', 'terminal'],
    });
    // A relative cwd is taken from the file's folder.
    expect(fs.cwd).toBe(path.join(dir, 'servers/fs'));
    expect(legacy).toMatchObject({ transport: 'sse', approve: true });
    expect(claude.transport).toBe('sse');
    expect(strict.transport).toBe('streamable-http');
  });

  it('expands ${VAR} in command, args, env, cwd, url and headers, and keeps the values as secrets', async () => {
    const file = await fileWith(
      servers({
        gh: {
          command: '${BIN_DIR}/github-mcp',
          args: ['--org', '${ORG}', 'plain $HOME stays'],
          env: { GITHUB_TOKEN: '${GITHUB_TOKEN}', LEVEL: '${LEVEL:-info}' },
          cwd: '${WORK}',
        },
        api: { url: 'https://${API_HOST}/mcp', headers: { Authorization: 'Bearer ${API_TOKEN}' } },
      }),
    );
    const env = {
      BIN_DIR: '/opt/bin',
      ORG: 'acme',
      GITHUB_TOKEN: 'ghp_secret_value',
      WORK: '/srv/work',
      API_HOST: 'api.example.com',
      API_TOKEN: 'tok_0123456789',
    };
    const [gh, api] = loadMcpConfig(file, env).servers as [McpStdioServer, McpHttpServer];
    expect(gh).toMatchObject({
      command: '/opt/bin/github-mcp',
      args: ['--org', 'acme', 'plain $HOME stays'],
      env: { GITHUB_TOKEN: 'ghp_secret_value', LEVEL: 'info' },
      cwd: '/srv/work',
    });
    expect(gh.secrets).toContain('ghp_secret_value');
    expect(api.url).toBe('https://api.example.com/mcp');
    expect(api.headers).toEqual({ Authorization: 'Bearer tok_0123456789' });
    expect(api.secrets).toEqual(expect.arrayContaining(['tok_0123456789', 'Bearer tok_0123456789']));
  });

  it('says so, in one line, when the file is missing or not JSON', async () => {
    const missing = path.join(dir, 'none.json');
    expect(() => loadMcpConfig(missing, {})).toThrow(new ConfigError([`MCP_CONFIG ${missing}: no such file`]));
    expect(await errorOf('{"mcpServers": {')).toMatch(/^not valid JSON \(.+\)$/);
  });

  it.each([
    ['[]', 'must be a JSON object {"mcpServers": {...}}'],
    [{}, 'has no "mcpServers" key: the file must hold {"mcpServers": {"<name>": {...}}}'],
    [{ mcpServers: [] }, 'mcpServers must be an object of servers by name'],
    [servers({ fs: 3 }), 'server "fs": must be an object'],
    [servers({ fs: { command: 'x', args: 'a b' } }), 'server "fs": args must be an array of strings'],
    [servers({ fs: { command: 'x', args: ['a', 1] } }), 'server "fs": args must be an array of strings'],
    [servers({ fs: { command: '' } }), 'server "fs": command must be a non-empty string (the program to run)'],
    [servers({ fs: { command: 'x', env: { DEBUG: 1 } } }), 'server "fs": env.DEBUG must be a string'],
    [servers({ fs: { command: 'x', env: ['A=1'] } }), 'server "fs": env must be an object of strings'],
    [servers({ fs: {} }), 'server "fs": needs "command" (a stdio server) or "url" (an HTTP server)'],
    [servers({ fs: { command: 'x', url: 'http://h/' } }), 'server "fs": has both "command" (a stdio server) and "url" (an HTTP server); give one'],
    [servers({ fs: { command: 'x', aprove: true } }), 'server "fs": has an unknown key "aprove"'],
    [servers({ fs: { command: 'x', tools: ['a'] } }), 'server "fs": tools must be an object {"include": [...], "exclude": [...]}'],
    [servers({ fs: { command: 'x', tools: { include: 'a' } } }), 'server "fs": tools.include must be an array of MCP tool names'],
    [servers({ fs: { command: 'x', tools: { only: ['a'] } } }), 'server "fs": tools has an unknown key "only"'],
    [servers({ fs: { command: 'x', approve: 'yes' } }), 'server "fs": approve must be true, false or an array of MCP tool names'],
    [servers({ fs: { command: 'x', timeoutMs: '5s' } }), 'server "fs": timeoutMs must be a whole number of milliseconds'],
    [servers({ fs: { command: 'x', timeoutMs: 1.5 } }), 'server "fs": timeoutMs must be a whole number of milliseconds'],
    [servers({ fs: { command: 'x', timeoutMs: 50 } }), 'server "fs": timeoutMs must be at least 100 (milliseconds)'],
    [servers({ fs: { command: 'x', platforms: ['Slack'] } }), 'server "fs": platforms must be an array of platform names such as ["slack", "telegram"]'],
    [servers({ fs: { command: 'x', platforms: 'slack' } }), 'server "fs": platforms must be an array of platform names such as ["slack", "telegram"]'],
    [servers({ fs: { command: 'x', headers: { A: 'b' } } }), 'server "fs": headers applies only to url servers'],
    [servers({ fs: { command: 'x', transport: 'sse' } }), 'server "fs": transport applies only to url servers'],
    [servers({ fs: { command: 'x', type: 'http' } }), 'server "fs": type http needs a "url", not a "command"'],
    [servers({ api: { url: 'http://h/', args: ['a'] } }), 'server "api": args applies only to command (stdio) servers'],
    [servers({ api: { url: 'http://h/', transport: 'websocket' } }), 'server "api": transport must be streamable-http or sse'],
    [servers({ api: { url: 'ftp://h/' } }), 'server "api": url must be an http:// or https:// URL'],
    [servers({ api: { url: 'http://h/', type: 'stdio' } }), 'server "api": type stdio needs a "command", not a "url"'],
  ])('rejects %j: %s', async (content, line) => {
    expect(await errorOf(content)).toBe(line);
  });

  it('names the server, the field and the variable when a ${VAR} is not set', async () => {
    expect(await errorOf(servers({ gh: { url: 'https://h/mcp', headers: { Authorization: 'Bearer ${GITHUB_TOKEN}' } } }))).toBe(
      'server "gh": headers.Authorization uses ${GITHUB_TOKEN}, which is not set',
    );
    expect(await errorOf(servers({ fs: { command: 'x', args: ['ok', '${DATA_DIR}'] } }))).toBe('server "fs": args[1] uses ${DATA_DIR}, which is not set');
    expect(await errorOf(servers({ fs: { command: 'x', env: { A: '${1BAD}' } } }))).toBe(
      'server "fs": env.A has "${1BAD}", which is not a reference such as ${NAME} or ${NAME:-fallback}',
    );
    // An empty value is set: only a missing one is an error.
    const file = await fileWith(servers({ fs: { command: 'x', env: { A: '${EMPTY}' } } }));
    expect((loadMcpConfig(file, { EMPTY: '' }).servers[0] as McpStdioServer).env).toEqual({ A: '' });
  });

  it('never echoes an expanded value in an error', async () => {
    const line = await errorOf(servers({ api: { url: '${API_URL}' } }), { API_URL: 'not a url with sk-secret-123' });
    expect(line).toBe('server "api": url must be an http:// or https:// URL');
  });
});
