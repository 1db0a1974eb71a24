import { ToolError, type Tool } from '../types.js';
import type { Workspace } from '../workspace.js';
import type { ListedTool } from './connection.js';
import { MEDIA_MAX_BYTES_DEFAULT, resultText, type McpCallResult } from './content.js';
import { mcpToolNames } from './names.js';

/** What a tool needs of its server: its name and policy, and a way to call it. */
export interface McpToolSource {
  /** The server's name in MCP_CONFIG. */
  readonly name: string;
  readonly config: { readonly approve: boolean | readonly string[] };
  readonly timeoutMs: number;
  call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult>;
}

export interface McpToolLimits {
  /** The largest image, audio clip or embedded resource a result may save into the workspace (ATTACHMENT_MAX_BYTES). */
  readonly mediaMaxBytes?: number;
}

/** The tools of these servers as the model sees them, named `<server>__<tool>` (see mcpToolNames). */
export function createMcpTools(entries: readonly { source: McpToolSource; tool: ListedTool }[], ws: Workspace, limits: McpToolLimits = {}): Tool[] {
  const names = mcpToolNames(entries.map((e) => ({ server: e.source.name, tool: e.tool.name })));
  return entries.map((e, i) => createMcpTool(names[i]!, e.source, e.tool, ws, limits));
}

/**
 * One MCP tool: the server's description and input schema as sent, its arguments checked against
 * that schema (ajv) by runToolCall, read-only only when the server says `readOnlyHint: true`.
 */
export function createMcpTool(name: string, source: McpToolSource, tool: ListedTool, ws: Workspace, limits: McpToolLimits = {}): Tool {
  const { approve } = source.config;
  const mediaMaxBytes = limits.mediaMaxBytes ?? MEDIA_MAX_BYTES_DEFAULT;
  const needsApproval = approve === true || (Array.isArray(approve) && approve.includes(tool.name));
  return {
    name,
    description: tool.description,
    schema: tool.args,
    inputSchema: tool.inputSchema,
    readOnly: tool.readOnly,
    timeoutMs: source.timeoutMs,
    ...(needsApproval ? { needsApproval: true as const } : {}),
    async execute(args, { signal }) {
      if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new ToolError('arguments must be a JSON object');
      const result = await source.call(tool.name, args as Record<string, unknown>, signal);
      return resultText(result, { ws, server: source.name, tool: tool.name }, mediaMaxBytes);
    },
  };
}
