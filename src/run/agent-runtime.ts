import { DEFAULT_SYSTEM_PROMPT } from '../agent/prompt.js';
import type { AgentLimits, ModelClient } from '../agent/types.js';
import type { InboundMessage } from '../channels/types.js';
import type { Logger } from '../log.js';
import { toolPolicyOf, type AgentProfile, type AgentRoster } from '../profiles/roster.js';
import { SkillShelf, skillListing, type Skill } from '../profiles/skills.js';
import type { ToolPolicy } from '../tools/policy.js';

/** What a worker runs one agent with: its profile, model client, limits, tool policy and skills. */
export interface AgentRuntime {
  profile: AgentProfile;
  model: ModelClient;
  limits: AgentLimits;
  historyTokens: number;
  policy: ToolPolicy;
  /** Absent: the agent has no skill folders. */
  skills?: SkillShelf;
}

/** What every agent starts from: the environment's model, limits and tool lists. */
export interface AgentDefaults {
  model: ModelClient;
  /** The client of an agent's own `model` entry. */
  modelFor(entry: NonNullable<AgentProfile['model']>): ModelClient;
  limits: AgentLimits;
  historyTokens: number;
  tools: { deny: readonly string[]; approve: readonly string[] };
  skillsPromptTokens: number;
  log: Logger;
}

/**
 * The worker's agents, built once at start: a malformed skill or a skills list over
 * SKILLS_PROMPT_TOKENS stops the worker there. Each turn asks for its session's agent and the
 * system prompt as the agent's skills are now (a skill folder that changed is read again).
 */
export class AgentRuntimes {
  private constructor(
    readonly roster: AgentRoster,
    private readonly byName: ReadonlyMap<string, AgentRuntime>,
  ) {}

  static async start(roster: AgentRoster, defaults: AgentDefaults): Promise<AgentRuntimes> {
    const clients = new Map<string, ModelClient>();
    const clientFor = (entry: AgentProfile['model']): ModelClient => {
      if (entry === undefined) return defaults.model;
      const key = JSON.stringify([entry.model, entry.baseUrl ?? '', entry.apiKeyEnv ?? '']);
      const client = clients.get(key) ?? defaults.modelFor(entry);
      clients.set(key, client);
      return client;
    };
    const runtimes = new Map<string, AgentRuntime>();
    for (const profile of roster.profiles) {
      const skills =
        profile.skillFolders.length === 0
          ? undefined
          : await SkillShelf.open(profile.skillFolders, { promptTokens: defaults.skillsPromptTokens, log: defaults.log, label: profile.name });
      runtimes.set(profile.name, {
        profile,
        model: clientFor(profile.model),
        limits: {
          ...defaults.limits,
          ...(profile.limits.maxSteps !== undefined && { maxSteps: profile.limits.maxSteps }),
          ...(profile.limits.contextTokens !== undefined && { maxContextTokens: profile.limits.contextTokens }),
        },
        historyTokens: profile.limits.historyTokens ?? defaults.historyTokens,
        policy: toolPolicyOf(profile, defaults.tools),
        ...(skills && { skills }),
      });
    }
    return new AgentRuntimes(roster, runtimes);
  }

  get(name: string): AgentRuntime | undefined {
    return this.byName.get(name);
  }

  /** The runtime of a session's agent: the recorded one while it exists, else the bindings' choice now. */
  forSession(recorded: string | undefined, message: InboundMessage): AgentRuntime {
    return this.byName.get(this.roster.forSession(recorded, message).name)!;
  }
}

/** The agent's prompt and its skills as they are now. */
export async function promptOf(agent: AgentRuntime): Promise<{ prompt: string; skills: readonly Skill[] }> {
  return { prompt: agent.profile.prompt ?? DEFAULT_SYSTEM_PROMPT, skills: agent.skills ? await agent.skills.current() : [] };
}

/**
 * The system message: the prompt, and the skills listing when load_skill is offered (the listing
 * is the operator's text, so it may sit there; a platform whose policy denies load_skill gets none).
 */
export function systemMessage(prompt: { prompt: string; skills: readonly Skill[] }, offersSkills: boolean): string {
  const listing = offersSkills ? skillListing(prompt.skills) : '';
  return listing === '' ? prompt.prompt : `${prompt.prompt}\n\n${listing}`;
}
