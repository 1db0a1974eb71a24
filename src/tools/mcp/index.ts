export { loadMcpConfig, type McpConfig, type McpHttpServer, type McpServerConfig, type McpStdioServer } from './config.js';
export type { McpState } from './connection.js';
export { mcpToolNames, sanitiseNamePart, MAX_TOOL_NAME, type McpToolRef } from './names.js';
export { McpRegistry, type McpServerStatus, type McpStartOptions } from './registry.js';
