import type { Redis } from 'ioredis';
import type { InboundMessage } from '../channels/types.js';
import type { SessionKeys } from '../queue/keys.js';
import type { AgentProfile, AgentRoster } from '../profiles/roster.js';
import { toolPolicyOf } from '../profiles/roster.js';
import { SkillShelf, type Skill } from '../profiles/skills.js';
import type { Logger } from '../log.js';
import { MEMORY_TOOLS } from '../memory/tools.js';

/** What /agent reads besides the roster: the environment's model and tools, MCP_CONFIG's servers. */
export interface AgentFacts {
  roster: AgentRoster;
  /** AGENT_MODEL: the model of an agent without its own. */
  defaultModel: string;
  /** The tools this deployment has on a platform (run_command only when TOOLS_EXEC is on or approve, send_file where it uploads, the schedule tools). */
  tools(platform: string): readonly string[];
  /** TOOLS_DENY / TOOLS_APPROVE as every agent starts from them. */
  global: { deny: readonly string[]; approve: readonly string[] };
  /** MCP_CONFIG's server names (undefined: no MCP_CONFIG). */
  mcpServers: readonly string[] | undefined;
  skillsPromptTokens: number;
  /** MEMORY: what an agent without its own `memory:` remembers. */
  memoryMode: 'person' | 'person+channel' | 'off';
  log: Logger;
}

const MEMORY_LINES = {
  person: "Memory: each person's own, never shown in anyone else's turn (/memory shows yours).",
  'person+channel': "Memory: each person's own (/memory shows yours), and one this channel shares.",
  off: 'Memory: off.',
} as const;

const SCOPES: Record<string, string> = {
  session: 'its own folder for this conversation',
  channel: 'one folder shared by every conversation in this channel',
  user: 'one folder per person, across their conversations',
};

/**
 * /agent: which agent answers here (the one recorded with the conversation, or the one the
 * bindings give a conversation started now), its model, tools, skills, MCP servers and workspace.
 */
export class AgentCommand {
  private readonly shelves = new Map<string, Promise<SkillShelf>>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: SessionKeys,
    private readonly facts: AgentFacts,
  ) {}

  async reply(session: string, message: InboundMessage): Promise<string> {
    const recorded = (await this.redis.get(this.keys.agentOf(session))) ?? undefined;
    const profile = this.facts.roster.forSession(recorded, message);
    return describeAgent(profile, message.platform, this.facts, await this.skillsOf(profile), recorded === profile.name);
  }

  /** The agent's skills as its folders hold them now (a malformed one is left out here; the worker refuses it at start). */
  private async skillsOf(profile: AgentProfile): Promise<readonly Skill[] | string> {
    if (profile.skillFolders.length === 0) return [];
    let shelf = this.shelves.get(profile.name);
    if (!shelf) {
      shelf = SkillShelf.open(profile.skillFolders, { promptTokens: this.facts.skillsPromptTokens, log: this.facts.log, label: profile.name });
      this.shelves.set(profile.name, shelf);
      shelf.catch(() => this.shelves.delete(profile.name));
    }
    try {
      return await (await shelf).current();
    } catch (err) {
      return `not readable here (${(err as Error).message.split('\n')[0]})`;
    }
  }
}

export function describeAgent(profile: AgentProfile, platform: string, facts: AgentFacts, skills: readonly Skill[] | string, recorded: boolean): string {
  const policy = toolPolicyOf(profile, facts.global);
  const memory = profile.memory ?? facts.memoryMode;
  const builtins = [
    ...facts.tools(platform),
    ...(typeof skills !== 'string' && skills.length > 0 ? ['load_skill'] : []),
    ...(memory === 'off' ? [] : MEMORY_TOOLS),
  ];
  const tools = builtins.filter((t) => policy.offered(platform, t)).map((t) => (policy.needsApproval(platform, t) ? `${t} (asks first)` : t));
  // With an allow list, a server counts only when the list names one of its tools (`<server>__<tool>`).
  const servers = (facts.mcpServers ?? []).filter(
    (s) =>
      (profile.mcpServers === undefined || profile.mcpServers.includes(s)) &&
      (profile.tools.allow === undefined || profile.tools.allow.some((t) => t.startsWith(`${s}__`) || t.includes(`:${s}__`))),
  );
  const scope = profile.workspace.startsWith('shared:') ? `the shared folder "${profile.workspace.slice(7)}"` : SCOPES[profile.workspace]!;
  const lines = [
    `Agent here: ${profile.name}${facts.roster.configured ? (recorded ? " (this conversation's agent since it started; /reset picks again)" : ' (what the bindings give this conversation)') : ''}.`,
    `Model: ${profile.model?.model ?? facts.defaultModel}${profile.model?.baseUrl ? ` at ${new URL(profile.model.baseUrl).host}` : ''}.`,
    `Tools: ${tools.join(', ') || 'none'}.`,
    `MCP servers: ${servers.join(', ') || 'none'}.`,
    typeof skills === 'string'
      ? `Skills: ${skills}.`
      : `Skills: ${skills.length === 0 ? 'none' : skills.map((s) => `${s.name} (${s.description.length > 80 ? `${s.description.slice(0, 79)}…` : s.description})`).join('; ')}.`,
    `Workspace: ${scope}.`,
    MEMORY_LINES[memory],
  ];
  if (profile.limits.maxSteps !== undefined) lines.push(`At most ${profile.limits.maxSteps} steps per request.`);
  return lines.join('\n');
}
