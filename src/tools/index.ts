import { createEditFileTool } from './edit-file.js';
import { createListFilesTool } from './list-files.js';
import { createReadFileTool } from './read-file.js';
import { createRunCommandTool } from './run-command.js';
import type { ExecOptions } from './sandbox.js';
import { createSearchFilesTool } from './search-files.js';
import type { Tool } from './types.js';
import { createWriteFileTool } from './write-file.js';
import type { Workspace } from './workspace.js';

/** The tools of one session: the workspace tools, and run_command when commands are enabled. */
export function buildTools(ws: Workspace, options: { exec?: ExecOptions } = {}): Tool[] {
  return [
    createListFilesTool(ws),
    createReadFileTool(ws),
    createWriteFileTool(ws),
    createEditFileTool(ws),
    createSearchFilesTool(ws),
    ...(options.exec ? [createRunCommandTool(ws, options.exec)] : []),
  ];
}

export { createEditFileTool, createListFilesTool, createReadFileTool, createRunCommandTool, createSearchFilesTool, createWriteFileTool };
export { loadMcpConfig, McpRegistry, type McpConfig, type McpServerStatus, type McpStartOptions } from './mcp/index.js';
export { checkExecRuntime, type ExecRuntimeCheck } from './exec.js';
export { runToolCall, MAX_RESULT_CHARS } from './run.js';
export type { ExecOptions } from './sandbox.js';
export { toModelTools } from './schema.js';
export { ToolError, type Tool, type ToolContext, type ToolResult } from './types.js';
export { Workspace, workspaceFolderName } from './workspace.js';
