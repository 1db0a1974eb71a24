import { createEditFileTool } from './edit-file.js';
import { createListFilesTool } from './list-files.js';
import { createReadFileTool } from './read-file.js';
import { createSearchFilesTool } from './search-files.js';
import type { Tool } from './types.js';
import { createWriteFileTool } from './write-file.js';
import type { Workspace } from './workspace.js';

/** The workspace tools of one session. */
export function buildTools(ws: Workspace): Tool[] {
  return [
    createListFilesTool(ws),
    createReadFileTool(ws),
    createWriteFileTool(ws),
    createEditFileTool(ws),
    createSearchFilesTool(ws),
  ];
}

export { createEditFileTool, createListFilesTool, createReadFileTool, createSearchFilesTool, createWriteFileTool };
export { runToolCall, MAX_RESULT_CHARS } from './run.js';
export { toModelTools } from './schema.js';
export { ToolError, type Tool, type ToolContext, type ToolResult } from './types.js';
export { Workspace, workspaceFolderName } from './workspace.js';
