import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../lib/config-error.js';

/**
 * MCP_CONFIG: the `mcpServers` file other MCP clients use (Claude Desktop, Cursor, Claude Code),
 * plus Switchboard's own keys per server. Strings that reach a process or a request may say
 * `${VAR}` (or `${VAR:-fallback}`) so secrets stay in the environment, not in the file.
 */
export type McpConfig = { readonly path: string; readonly servers: readonly McpServerConfig[] };

export type McpServerConfig = McpStdioServer | McpHttpServer;

interface McpServerCommon {
  readonly name: string;
  /** MCP tool names offered (include: only these) and withheld (exclude wins). */
  readonly tools: { readonly include?: readonly string[]; readonly exclude?: readonly string[] };
  /** Every call needs a person's approval (true), or only the calls of these MCP tool names. */
  readonly approve: boolean | readonly string[];
  /** The deadline of one call; absent: TOOL_TIMEOUT_MS. */
  readonly timeoutMs?: number;
  /** Platforms whose conversations are offered this server's tools; absent: all. */
  readonly platforms?: readonly string[];
  /** Values that came from the environment or sit in env/headers: never logged, never in status. */
  readonly secrets: readonly string[];
}

/** A child process of the worker speaking MCP on stdin/stdout. */
export interface McpStdioServer extends McpServerCommon {
  readonly kind: 'stdio';
  readonly command: string;
  readonly args: readonly string[];
  /** Its environment beyond PATH (and the SDK's HOME, USER, LOGNAME, SHELL, TERM): nothing of the worker's unless named here. */
  readonly env: Readonly<Record<string, string>>;
  /** Relative paths in the file are taken from the file's folder. */
  readonly cwd?: string;
}

/** A remote server: Streamable HTTP, falling back to the older HTTP+SSE transport (`auto`), or one of them only. */
export interface McpHttpServer extends McpServerCommon {
  readonly kind: 'http';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly transport: 'auto' | 'streamable-http' | 'sse';
}

const text = (what: string) => z.string({ error: `must be ${what}` }).min(1, `must be ${what}`);
const strings = (what: string) => z.array(z.string({ error: `must be ${what}` }), { error: `must be ${what}` });
const stringMap = z.record(z.string(), z.string({ error: 'must be a string' }), { error: 'must be an object of strings' });
const toolNames = strings('an array of MCP tool names');

const serverSchema = z.strictObject(
  {
    command: text('a non-empty string (the program to run)').optional(),
    args: strings('an array of strings').optional(),
    env: stringMap.optional(),
    cwd: text('a non-empty string (a folder)').optional(),
    url: text('an http(s) URL').optional(),
    headers: stringMap.optional(),
    // "type" is what Claude Code and VS Code files say; "transport" is ours.
    type: z.enum(['stdio', 'http', 'streamable-http', 'sse'], { error: 'must be stdio, http, streamable-http or sse' }).optional(),
    transport: z.enum(['streamable-http', 'sse'], { error: 'must be streamable-http or sse' }).optional(),
    tools: z
      .strictObject({ include: toolNames.optional(), exclude: toolNames.optional() }, { error: 'must be an object {"include": [...], "exclude": [...]}' })
      .optional(),
    approve: z.union([z.boolean(), toolNames], { error: 'must be true, false or an array of MCP tool names' }).optional(),
    timeoutMs: z
      .int({ error: 'must be a whole number of milliseconds' })
      .min(100, 'must be at least 100 (milliseconds)')
      .max(3_600_000, 'must be at most 3600000 (one hour)')
      .optional(),
    platforms: z
      .array(z.string().regex(/^[a-z][a-z0-9_-]*$/, 'must be an array of platform names such as ["slack", "telegram"]'), {
        error: 'must be an array of platform names such as ["slack", "telegram"]',
      })
      .optional(),
  },
  { error: 'must be an object' },
);

const fileSchema = z.object(
  { mcpServers: z.record(z.string(), serverSchema, { error: 'must be an object of servers by name' }) },
  { error: 'must be a JSON object {"mcpServers": {...}}' },
);

type RawServer = z.output<typeof serverSchema>;

const STDIO_ONLY = ['args', 'env', 'cwd'] as const;
const HTTP_ONLY = ['headers', 'transport'] as const;

/** Reads and checks the file; throws a ConfigError whose message is one line naming the server and field. */
export function loadMcpConfig(file: string, env: Readonly<Record<string, string | undefined>>): McpConfig {
  const fail = (what: string): never => {
    throw new ConfigError([`MCP_CONFIG ${file}: ${what}`]);
  };
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code;
    return fail(code === 'ENOENT' ? 'no such file' : `cannot read it (${code ?? (err as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(source);
  } catch (err) {
    return fail(`not valid JSON (${(err as Error).message})`);
  }
  if (typeof json === 'object' && json !== null && !Array.isArray(json) && !('mcpServers' in json)) {
    return fail('has no "mcpServers" key: the file must hold {"mcpServers": {"<name>": {...}}}');
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) return fail(describeIssue(parsed.error.issues[0]!));

  const servers: McpServerConfig[] = [];
  for (const [name, raw] of Object.entries(parsed.data.mcpServers)) {
    const problem = (what: string) => fail(`server "${name}": ${what}`);
    if (name.trim() === '') fail('a server has an empty name');
    servers.push(toServer(name, raw, env, path.dirname(path.resolve(file)), problem));
  }
  return { path: file, servers };
}

function toServer(
  name: string,
  raw: RawServer,
  env: Readonly<Record<string, string | undefined>>,
  baseDir: string,
  problem: (what: string) => never,
): McpServerConfig {
  if (raw.command !== undefined && raw.url !== undefined) problem('has both "command" (a stdio server) and "url" (an HTTP server); give one');
  if (raw.command === undefined && raw.url === undefined) problem('needs "command" (a stdio server) or "url" (an HTTP server)');

  const secrets: string[] = [];
  const expand = (field: string, value: string): string => {
    const out = expandVars(
      value,
      env,
      (ref) => problem(`${field} uses \${${ref}}, which is not set`),
      (ref) => problem(`${field} has "\${${ref}}", which is not a reference such as \${NAME} or \${NAME:-fallback}`),
    );
    if (out.substituted) secrets.push(...out.values);
    return out.text;
  };
  const expandMap = (field: string, map: Record<string, string> | undefined) =>
    Object.fromEntries(Object.entries(map ?? {}).map(([k, v]) => [k, expand(`${field}.${k}`, v)]));

  const common = {
    name,
    tools: { include: raw.tools?.include, exclude: raw.tools?.exclude },
    approve: raw.approve ?? false,
    timeoutMs: raw.timeoutMs,
    platforms: raw.platforms,
  };

  if (raw.command !== undefined) {
    for (const key of HTTP_ONLY) if (raw[key] !== undefined) problem(`${key} applies only to url servers`);
    if (raw.type !== undefined && raw.type !== 'stdio') problem(`type ${raw.type} needs a "url", not a "command"`);
    const serverEnv = expandMap('env', raw.env);
    const cwd = raw.cwd === undefined ? undefined : path.resolve(baseDir, expand('cwd', raw.cwd));
    return {
      ...common,
      kind: 'stdio',
      command: expand('command', raw.command),
      args: (raw.args ?? []).map((a, i) => expand(`args[${i}]`, a)),
      env: serverEnv,
      ...(cwd === undefined ? {} : { cwd }),
      secrets: keepSecrets([...secrets, ...Object.values(serverEnv)]),
    };
  }

  for (const key of STDIO_ONLY) if (raw[key] !== undefined) problem(`${key} applies only to command (stdio) servers`);
  if (raw.type === 'stdio') problem('type stdio needs a "command", not a "url"');
  const url = expand('url', raw.url!);
  // The value may hold a secret: name the rule, never echo it.
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) problem('url must be an http:// or https:// URL');
  const headers = expandMap('headers', raw.headers);
  const transport = raw.transport ?? (raw.type === 'sse' ? 'sse' : 'auto');
  if (raw.transport !== undefined && raw.type === 'sse' && raw.transport !== 'sse') problem('type sse and transport streamable-http disagree');
  return { ...common, kind: 'http', url, headers, transport, secrets: keepSecrets([...secrets, ...Object.values(headers)]) };
}

/** Short values ("1", "true") would blank out ordinary words; they are not secrets worth hiding. */
function keepSecrets(values: string[]): string[] {
  return [...new Set(values.filter((v) => v.length >= 6))];
}

const REFERENCE = /\$\{([^}]*)\}/g;
const VAR_NAME = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s;

/** `${NAME}` and `${NAME:-fallback}` replaced from `env`; an unset NAME without a fallback is an error. */
export function expandVars(
  value: string,
  env: Readonly<Record<string, string | undefined>>,
  unset: (name: string) => never,
  malformed: (ref: string) => never,
): { text: string; substituted: boolean; values: string[] } {
  const values: string[] = [];
  const text = value.replace(REFERENCE, (_all, ref: string) => {
    const m = VAR_NAME.exec(ref);
    if (!m) return malformed(ref);
    const [, name, fallback] = m;
    const got = env[name!] ?? fallback;
    if (got === undefined) return unset(name!);
    if (env[name!] !== undefined) values.push(got);
    return got;
  });
  return { text, substituted: values.length > 0, values };
}

/** One zod issue as "server "fs": args must be an array of strings". */
function describeIssue(issue: z.core.$ZodIssue): string {
  const [top, server, ...rest] = issue.path.map(String);
  if (top === undefined) return issue.message;
  if (server === undefined) return `${top} ${issue.message}`;
  if (issue.code === 'unrecognized_keys') {
    const where = rest.length > 0 ? `${rest.join('.')} has` : 'has';
    return `server "${server}": ${where} an unknown key ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  }
  // args.1 and platforms.0 are reported as the field: the message already says "an array of …".
  const field = issue.path
    .slice(2)
    .filter((p) => typeof p === 'string')
    .join('.');
  return field === '' ? `server "${server}": ${issue.message}` : `server "${server}": ${field} ${issue.message}`;
}
