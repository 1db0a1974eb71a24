import { globalToolLists, type Config } from '../config/config.js';
import type { AgentFacts } from '../intake/agent-command.js';
import type { Logger } from '../log.js';
import type { AgentRoster } from '../profiles/roster.js';
import { SCHEDULE_TOOL_NAMES } from '../schedules/tools.js';
import { buildTools, loadMcpConfig, Workspace } from '../tools/index.js';

/** Platforms whose outbound half uploads files (send_file is offered there). */
const UPLOADS = ['slack', 'telegram', 'discord'];

/**
 * What /agent tells about this deployment's agents, from the configuration alone (a gateway runs
 * no tools): the workspace tools as the worker builds them, send_file where it uploads, the
 * schedule tools when people may make schedules, MCP_CONFIG's servers.
 */
export function agentFacts(config: Config, roster: AgentRoster, log: Logger): AgentFacts {
  const { mode: _mode, ...exec } = config.exec;
  const workspaceTools = buildTools(new Workspace('/'), config.exec.mode === 'off' ? {} : { exec }).map((t) => t.name);
  let mcpServers: string[] | undefined;
  try {
    mcpServers = config.mcpConfigPath === undefined ? undefined : loadMcpConfig(config.mcpConfigPath, process.env).servers.map((s) => s.name);
  } catch (err) {
    // The worker refuses a wrong MCP_CONFIG at its start; /agent just lists no servers.
    log.warn({ err }, 'MCP_CONFIG could not be read for /agent');
    mcpServers = [];
  }
  return {
    roster,
    defaultModel: config.model.name,
    tools: (platform) => [
      ...workspaceTools,
      ...(UPLOADS.includes(platform) ? ['send_file'] : []),
      ...(config.schedules.perUser > 0 ? SCHEDULE_TOOL_NAMES : []),
    ],
    global: globalToolLists(config),
    mcpServers,
    skillsPromptTokens: config.agents.skillsPromptTokens,
    memoryMode: config.memory.mode,
    log: log.child({ component: 'skills' }),
  };
}
