import type { Config } from '../../config/config.js';
import { ConfigError } from '../../lib/config-error.js';
import { createLogger } from '../../log.js';
import { AgentRoster } from '../../profiles/roster.js';
import { SkillShelf } from '../../profiles/skills.js';
import { loadMcpConfig } from '../../tools/mcp/index.js';
import { fail, ok, type CheckResult } from '../types.js';

const FIX = 'fix AGENTS_CONFIG’s file (README “Agents and skills”)';

/** AGENTS_CONFIG as the worker reads it at start: the file, its bindings, each agent's key, MCP servers and skills. */
export async function checkAgents(config: Config, env: NodeJS.ProcessEnv): Promise<CheckResult[]> {
  const path = config.agents.configPath;
  // One agent from the environment is a whole configuration, not a skipped check.
  if (path === undefined) return [ok('agents', 'one agent from the environment (AGENTS_CONFIG not set)')];
  let roster: AgentRoster;
  try {
    roster = AgentRoster.load(path);
  } catch (err) {
    if (err instanceof ConfigError) return err.lines.map((line) => fail('agents', line, FIX));
    throw err;
  }
  let servers: string[] | undefined;
  try {
    servers = config.mcpConfigPath === undefined ? undefined : loadMcpConfig(config.mcpConfigPath, env).servers.map((s) => s.name);
  } catch {
    // checkMcp reports a wrong MCP_CONFIG; here its servers count as none.
    servers = [];
  }
  const results: CheckResult[] = roster.problems(env, servers).map((line) => fail('agents', line, FIX));
  let skills = 0;
  for (const profile of roster.profiles) {
    if (profile.skillFolders.length === 0) continue;
    try {
      const shelf = await SkillShelf.open(profile.skillFolders, {
        promptTokens: config.agents.skillsPromptTokens,
        log: createLogger('silent', 'doctor'),
        label: profile.name,
      });
      skills += (await shelf.current()).length;
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      results.push(...err.lines.map((line) => fail(`agent ${profile.name} skills`, line, 'fix or remove the skill (README “Skills”)')));
    }
  }
  if (results.length > 0) return results;
  const names = roster.profiles.map((p) => p.name);
  return [ok('agents', `${names.length} agent(s) (${names.join(', ')}), default ${roster.fallback}, ${skills} skill(s)`)];
}
