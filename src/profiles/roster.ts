import type { InboundMessage } from '../channels/types.js';
import { ConfigError } from '../lib/config-error.js';
import { decideAgent, findTies, normaliseBinding, placeOf, type Binding } from './bindings.js';
import { loadAgentsFile } from './file.js';
import { ToolPolicy } from '../tools/policy.js';
import { LOAD_SKILL } from './skill-tool.js';

/** Where an agent's files live: per conversation (today's), per channel, per person, or one named folder. */
export type WorkspaceScope = 'session' | 'channel' | 'user' | `shared:${string}`;

/** One agent as configured: what is not set here comes from the environment (the implicit agent is all environment). */
export interface AgentProfile {
  name: string;
  /** The system prompt; undefined: the default prompt. */
  prompt?: string;
  /** Its own model (and endpoint); undefined: AGENT_MODEL at OPENAI_BASE_URL. */
  model?: { model: string; baseUrl?: string; apiKeyEnv?: string };
  /** On top of TOOLS_DENY / TOOLS_APPROVE: `allow` offers only these, `deny` and `approve` add to the global lists. */
  tools: { allow?: string[]; deny: string[]; approve: string[] };
  /** MCP_CONFIG server names this agent gets; undefined: all of them. */
  mcpServers?: string[];
  /** Absolute folders holding one folder per skill. */
  skillFolders: string[];
  workspace: WorkspaceScope;
  /** Overrides MEMORY for this agent. */
  memory?: 'person' | 'person+channel' | 'off';
  limits: { maxSteps?: number; historyTokens?: number; contextTokens?: number };
}

/**
 * An agent's tool policy: TOOLS_DENY / TOOLS_APPROVE (and `approve` for run_command under
 * TOOLS_EXEC=approve) with the agent's lists added. An agent with skills may always load them:
 * its `allow` list need not name load_skill (a `deny` still takes it away).
 */
export function toolPolicyOf(
  profile: Pick<AgentProfile, 'tools' | 'skillFolders'>,
  global: { deny: readonly string[]; approve: readonly string[] },
): ToolPolicy {
  const { allow } = profile.tools;
  return new ToolPolicy({
    deny: [...global.deny, ...profile.tools.deny],
    approve: [...global.approve, ...profile.tools.approve],
    ...(allow && { allow: profile.skillFolders.length > 0 ? [...allow, LOAD_SKILL] : allow }),
  });
}

/** The name of the one agent a deployment without AGENTS_CONFIG has. */
export const IMPLICIT_AGENT = 'default';

/**
 * The agents of this deployment and how a conversation gets one. Loaded once at start by every
 * process (the gateway decides at queueing, the worker runs the profile); a wrong file, a tie
 * between bindings or an unknown agent name stops start-up.
 */
export class AgentRoster {
  private readonly byName: ReadonlyMap<string, AgentProfile>;

  private constructor(
    profiles: readonly AgentProfile[],
    private readonly bindings: readonly Binding[],
    readonly fallback: string,
    /** False: no AGENTS_CONFIG, one implicit agent from the environment. */
    readonly configured: boolean,
  ) {
    this.byName = new Map(profiles.map((p) => [p.name, p]));
  }

  static implicit(): AgentRoster {
    return new AgentRoster(
      [{ name: IMPLICIT_AGENT, tools: { deny: [], approve: [] }, skillFolders: [], workspace: 'session', limits: {} }],
      [],
      IMPLICIT_AGENT,
      false,
    );
  }

  /** AGENTS_CONFIG's roster, or the implicit one without it. */
  static load(path: string | undefined): AgentRoster {
    if (path === undefined) return AgentRoster.implicit();
    const { file, prompts, skillFolders } = loadAgentsFile(path);
    const bindings = file.bindings.map((b) => normaliseBinding(b as Binding));
    const ties = findTies(bindings);
    if (ties.length > 0) throw new ConfigError(ties.map((t) => `config: AGENTS_CONFIG (${path}): ${t}`));
    const profiles = file.agents.map(
      (a): AgentProfile => ({
        name: a.name,
        ...(prompts.has(a.name) && { prompt: prompts.get(a.name)! }),
        ...(a.model && { model: a.model }),
        tools: { ...(a.tools?.allow && { allow: a.tools.allow }), deny: a.tools?.deny ?? [], approve: a.tools?.approve ?? [] },
        ...(a.mcpServers && { mcpServers: a.mcpServers }),
        skillFolders: skillFolders.get(a.name) ?? [],
        workspace: a.workspace as WorkspaceScope,
        ...(a.memory && { memory: a.memory }),
        limits: {
          ...(a.limits?.maxSteps !== undefined && { maxSteps: a.limits.maxSteps }),
          ...(a.limits?.historyTokens !== undefined && { historyTokens: a.limits.historyTokens }),
          ...(a.limits?.contextTokens !== undefined && { contextTokens: a.limits.contextTokens }),
        },
      }),
    );
    return new AgentRoster(profiles, bindings, file.default, true);
  }

  get profiles(): AgentProfile[] {
    return [...this.byName.values()];
  }

  get(name: string): AgentProfile | undefined {
    return this.byName.get(name);
  }

  /** The agent the bindings give a new conversation that `message` starts. */
  decide(message: Pick<InboundMessage, 'platform' | 'conversation' | 'sender' | 'where' | 'meta'>): string {
    return decideAgent(this.bindings, this.fallback, placeOf(message));
  }

  /** What the producer records for a new session: the bindings' choice; undefined without AGENTS_CONFIG (one agent, nothing to record). */
  decider(): ((message: InboundMessage) => string) | undefined {
    return this.configured ? (message) => this.decide(message) : undefined;
  }

  /**
   * The agent of a session: the one recorded with it, while that agent still exists; otherwise
   * (a session older than the roster, or its agent was removed) what the bindings say now.
   */
  forSession(recorded: string | undefined, message: Pick<InboundMessage, 'platform' | 'conversation' | 'sender' | 'where' | 'meta'>): AgentProfile {
    const kept = recorded === undefined ? undefined : this.byName.get(recorded);
    return kept ?? this.byName.get(this.decide(message))!;
  }

  /**
   * What the environment must give the agents: each `apiKeyEnv` set, each MCP server named in
   * MCP_CONFIG. One line per miss (the worker refuses to start on any; doctor lists them).
   */
  problems(env: NodeJS.ProcessEnv, mcpServers: readonly string[] | undefined): string[] {
    const lines: string[] = [];
    for (const p of this.byName.values()) {
      if (p.model?.apiKeyEnv !== undefined && !env[p.model.apiKeyEnv]) lines.push(`agent "${p.name}": model.apiKeyEnv: ${p.model.apiKeyEnv} is not set`);
      for (const server of p.mcpServers ?? []) {
        if (mcpServers === undefined) lines.push(`agent "${p.name}": mcpServers: "${server}" needs MCP_CONFIG (it is not set)`);
        else if (!mcpServers.includes(server))
          lines.push(`agent "${p.name}": mcpServers: MCP_CONFIG has no server "${server}" (it has ${mcpServers.join(', ') || 'none'})`);
      }
    }
    return lines;
  }
}
