import type { InboundMessage, OutboundAdapter } from '../channels/types.js';
import { createLoadSkillTool } from '../profiles/skill-tool.js';
import { createScheduleTools } from '../schedules/tools.js';
import { buildTools } from '../tools/index.js';
import type { Tool } from '../tools/types.js';
import type { Workspace } from '../tools/workspace.js';
import type { AgentRuntime } from './agent-runtime.js';
import type { RunContext } from './context.js';
import { createSendFileTool } from './delivery/send-file.js';

/**
 * The tools this turn offers: the workspace's own (run_command when enabled), send_file where
 * the platform can upload, the schedule tools when offered, load_skill when the agent has skills,
 * the agent's MCP servers' tools and the memory tools; less what the agent's tool policy keeps from this platform.
 */
export function turnTools(
  ctx: RunContext,
  workspace: Workspace,
  out: OutboundAdapter,
  to: InboundMessage,
  agent: AgentRuntime,
  memory: readonly Tool[] = [],
): Tool[] {
  const { tools, schedules } = ctx.deps;
  const sendFile = createSendFileTool(workspace, out, to);
  const scheduling = schedules?.offered
    ? createScheduleTools(schedules.book, { from: to, defaultTz: schedules.defaultTz, approvers: schedules.approvers })
    : [];
  const offered = [
    ...buildTools(workspace, tools.exec ? { exec: tools.exec } : {}),
    ...(sendFile ? [sendFile] : []),
    ...scheduling,
    ...(agent.skills ? [createLoadSkillTool(agent.skills, { sandboxed: tools.exec?.sandbox === 'bwrap' })] : []),
    ...(tools.extraTools?.(workspace, to.platform, agent.profile.mcpServers) ?? []),
    ...memory,
  ];
  return offered.filter((t) => agent.policy.offered(to.platform, t.name));
}
