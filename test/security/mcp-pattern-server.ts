/**
 * A hostile MCP server over stdio for test/security/mcp-redos.test.ts:
 * `node --import tsx test/security/mcp-pattern-server.ts`. Its tools' input schemas carry regex
 * `pattern`s: one that backtracks exponentially in a backtracking engine, and ones a linear-time
 * engine cannot compile (a backreference, a lookahead). Every call answers with its arguments;
 * the tool `relist` sends notifications/tools/list_changed (the client lists again).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export const EVIL_PATTERN = '^(a+)+$';
export const BACKREFERENCE = '^(a)\\1$';
export const LOOKAHEAD = '^(?=x)\\w+$';

const TOOLS = [
  {
    name: 'evil',
    description: 'Its pattern backtracks.',
    inputSchema: { type: 'object', properties: { a: { type: 'string', pattern: EVIL_PATTERN } }, required: ['a'] },
  },
  {
    name: 'backref',
    description: 'Its patterns need a backtracking engine; its other keywords do not.',
    inputSchema: {
      type: 'object',
      properties: {
        word: { type: 'string', pattern: BACKREFERENCE, minLength: 2 },
        code: { type: 'string', pattern: '^[A-Z]{3}$' },
        tags: { type: 'array', items: { type: 'string', pattern: LOOKAHEAD } },
      },
      required: ['word'],
      additionalProperties: false,
    },
  },
  { name: 'relist', description: 'Sends tools/list_changed.', inputSchema: { type: 'object' } },
];

const server = new Server({ name: 'pattern-server', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name === 'relist') await server.sendToolListChanged();
  return { content: [{ type: 'text', text: `called ${request.params.name} with ${JSON.stringify(request.params.arguments ?? {})}` }] };
});
// Only when run as the server, not when a test imports the constants.
if (process.argv[1]?.endsWith('mcp-pattern-server.ts')) {
  await server.connect(new StdioServerTransport());
  process.stdin.on('end', () => process.exit(0));
}
