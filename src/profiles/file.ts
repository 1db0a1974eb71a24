import { readFileSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../lib/config-error.js';

/**
 * The AGENTS_CONFIG file: agents, the bindings that pick one for a conversation, and the default.
 * YAML or JSON of the same shape (part of the configuration contract). Every wrong value is one
 * line naming the agent (or binding) and the field.
 */

const TOOL_ENTRY = /^([a-z]+:)?[A-Za-z0-9_.-]+$/;
const toolList = z.array(z.string().regex(TOOL_ENTRY, 'must be a tool name or platform:tool')).optional();
const whole = (min: number, max: number) =>
  z.int(`must be a whole number from ${min} to ${max}`).min(min, `must be from ${min} to ${max}`).max(max, `must be from ${min} to ${max}`);

export const AGENT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const SHARED_SCOPE = /^shared:[a-z0-9][a-z0-9_-]{0,63}$/;

const agentSchema = z
  .object({
    name: z.string({ error: 'is required' }).regex(AGENT_NAME, 'must be lowercase letters, digits, - and _ (up to 64)'),
    prompt: z
      .union([z.string().trim().min(1), z.object({ file: z.string().min(1) }).strict()], { error: 'must be the prompt text or {file: path}' })
      .optional(),
    model: z
      .object({
        model: z.string({ error: 'is required (the model name)' }).trim().min(1, 'is required (the model name)'),
        baseUrl: z
          .string()
          .refine((v) => URL.canParse(v), 'must be an absolute URL such as http://gpu-box:8000/v1')
          .optional(),
        apiKeyEnv: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must name an environment variable')
          .optional(),
      })
      .strict()
      .optional(),
    tools: z.object({ allow: toolList, deny: toolList, approve: toolList }).strict().optional(),
    mcpServers: z.array(z.string().min(1)).optional(),
    skills: z.array(z.string().min(1)).optional(),
    workspace: z
      .string()
      .refine((v) => ['session', 'channel', 'user'].includes(v) || SHARED_SCOPE.test(v), 'must be session, channel, user or shared:<name>')
      .default('session'),
    memory: z.enum(['person', 'person+channel', 'off'], { error: 'must be person, person+channel or off' }).optional(),
    limits: z
      .object({ maxSteps: whole(1, 500).optional(), historyTokens: whole(0, 1_000_000).optional(), contextTokens: whole(1_000, 2_000_000).optional() })
      .strict()
      .optional(),
  })
  .strict();

const id = z.union([z.string().trim().min(1), z.number().int().transform(String)], { error: 'must be an id' });

const bindingSchema = z
  .object({
    platform: z.enum(['slack', 'telegram', 'discord', 'terminal'], { error: 'must be slack, telegram, discord or terminal' }).optional(),
    team: id.optional(),
    guild: id.optional(),
    channel: id.optional(),
    user: id.optional(),
    kind: z.enum(['dm', 'group'], { error: 'must be dm or group' }).optional(),
    agent: z.string({ error: 'is required (the agent that answers)' }),
  })
  .strict();

const fileSchema = z
  .object({
    agents: z.array(agentSchema, { error: 'must be a list of agents' }).min(1, 'must name at least one agent'),
    bindings: z.array(bindingSchema, { error: 'must be a list of bindings' }).default([]),
    default: z.string().optional(),
  })
  .strict();

export type AgentEntry = z.output<typeof agentSchema>;
export type BindingEntry = z.output<typeof bindingSchema>;
export type AgentsFile = z.output<typeof fileSchema> & { default: string };

/** What a prompt file or a skill folder is relative to: the config file's folder. */
export interface LoadedAgentsFile {
  file: AgentsFile;
  /** The prompt text of each agent that has one (files read). */
  prompts: Map<string, string>;
  /** Each agent's skill folders, absolute. */
  skillFolders: Map<string, string[]>;
}

/** Reads and validates AGENTS_CONFIG; a wrong file throws one ConfigError with a line per problem. */
export function loadAgentsFile(path: string): LoadedAgentsFile {
  const where = `AGENTS_CONFIG (${path})`;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`config: ${where}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`]);
  }
  let raw: unknown;
  try {
    raw = extname(path).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigError([`config: ${where}: not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message.split('\n')[0]}`]);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => `config: ${where}: ${describePath(raw, issue.path)}: ${issue.message}`));
  const base = dirname(resolve(path));
  const problems = crossCheck(parsed.data);
  const prompts = new Map<string, string>();
  const skillFolders = new Map<string, string[]>();
  for (const agent of parsed.data.agents) {
    skillFolders.set(
      agent.name,
      (agent.skills ?? []).map((folder) => resolve(base, folder)),
    );
    if (agent.prompt === undefined) continue;
    if (typeof agent.prompt === 'string') {
      prompts.set(agent.name, agent.prompt);
      continue;
    }
    try {
      const body = readFileSync(resolve(base, agent.prompt.file), 'utf8').trim();
      if (body === '') problems.push(`agent "${agent.name}": prompt.file: ${agent.prompt.file} is empty`);
      prompts.set(agent.name, body);
    } catch (err) {
      problems.push(`agent "${agent.name}": prompt.file: cannot read ${agent.prompt.file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `config: ${where}: ${p}`));
  const fallback = parsed.data.default ?? 'default';
  return { file: { ...parsed.data, default: fallback }, prompts, skillFolders };
}

/** What zod cannot see: unique names, agents that exist, bindings that mean something. */
function crossCheck(file: z.output<typeof fileSchema>): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  for (const agent of file.agents) {
    if (names.has(agent.name)) problems.push(`agent "${agent.name}": name: another agent has this name`);
    names.add(agent.name);
  }
  if (file.default === undefined && !names.has('default'))
    problems.push('default: is required (the agent that answers where no binding matches), or name an agent "default"');
  else if (file.default !== undefined && !names.has(file.default)) problems.push(`default: no agent is named "${file.default}"`);
  file.bindings.forEach((b, i) => {
    if (!names.has(b.agent)) problems.push(`bindings[${i}]: agent: no agent is named "${b.agent}"`);
    if (b.team !== undefined && b.platform !== undefined && b.platform !== 'slack')
      problems.push(`bindings[${i}]: team: is a Slack workspace id (platform must be slack)`);
    if (b.guild !== undefined && b.platform !== undefined && b.platform !== 'discord')
      problems.push(`bindings[${i}]: guild: is a Discord server id (platform must be discord)`);
    if (b.team !== undefined && b.guild !== undefined) problems.push(`bindings[${i}]: team and guild cannot both be set (one is Slack's, the other Discord's)`);
    const { agent: _agent, ...match } = b;
    if (Object.keys(match).length === 0)
      problems.push(`bindings[${i}]: matches every message: say where (platform, team, guild, channel, user, kind), or use default`);
  });
  return problems;
}

/** `agents[0].tools.allow[1]` as `agent "support": tools.allow[1]`, which the operator finds in the file. */
function describePath(raw: unknown, path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'the file';
  const [head, index, ...rest] = path;
  const tail = (parts: readonly PropertyKey[]) => parts.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
  if (head === 'agents' && typeof index === 'number') {
    const name = (raw as { agents?: { name?: unknown }[] }).agents?.[index]?.name;
    const who = typeof name === 'string' ? `agent "${name}"` : `agents[${index}]`;
    return rest.length === 0 ? who : `${who}: ${tail(rest)}`;
  }
  return tail(path);
}
