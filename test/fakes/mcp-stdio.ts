/**
 * The fake MCP server over stdio: `node --import tsx test/fakes/mcp-stdio.ts`.
 * FAKE_MCP_APPEND_FILE: the file append_line writes; FAKE_MCP_APPEND_DELAY_MS: how long it waits after
 * writing before it answers; FAKE_MCP_PAGE_SIZE: tools per tools/list page.
 * It exits when its stdin closes (the client went away).
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { FakeMcpTools } from './mcp-server.js';

const tools = new FakeMcpTools({
  ...(process.env.FAKE_MCP_APPEND_FILE ? { appendFile: process.env.FAKE_MCP_APPEND_FILE } : {}),
  ...(process.env.FAKE_MCP_APPEND_DELAY_MS ? { appendDelayMs: Number(process.env.FAKE_MCP_APPEND_DELAY_MS) } : {}),
  pageSize: Number(process.env.FAKE_MCP_PAGE_SIZE ?? 4),
});
await tools.createServer().connect(new StdioServerTransport());
process.stdin.on('end', () => process.exit(0));
