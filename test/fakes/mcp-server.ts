import { randomUUID } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';

/** A 1×1 PNG. */
export const DOT_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
export const BLOB_BYTES = Buffer.from([0, 1, 2, 3, 254, 255]);
/** Over 64 characters once prefixed with a server name: the model sees it shortened. */
export const LONG_TOOL = 'summarise_the_quarterly_revenue_figures_for_every_region_and_product_line';

export interface FakeMcpOptions {
  /** The file append_line writes to (the one side effect of this server). */
  appendFile?: string;
  /** tools/list returns this many per page, with a cursor for the rest. */
  pageSize?: number;
  /** append_line answers this long after its write. */
  appendDelayMs?: number;
}

interface FakeTool {
  def: Tool;
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
const object = (properties: Record<string, object>, required: string[] = []) => ({
  type: 'object' as const,
  properties,
  required,
  additionalProperties: false,
});

/**
 * The tools of a fake MCP server, shared by every connection to it (one low-level SDK `Server`
 * per stdio process or HTTP session): lookup (read-only), append_line (side-effecting), draw
 * (image), doc (embedded resources), fail (isError), sleep (slow, honours cancellation), env and
 * pid (to look inside a stdio server), add_tool (adds a tool and sends list_changed).
 */
export class FakeMcpTools {
  readonly #tools = new Map<string, FakeTool>();
  readonly #servers = new Set<Server>();
  readonly #pageSize: number;
  /** Calls of sleep that ended by cancellation. */
  cancelled = 0;
  /** Calls of sleep that started. */
  slept = 0;

  constructor(options: FakeMcpOptions = {}) {
    this.#pageSize = options.pageSize ?? 4;
    const add = (def: Tool, run: FakeTool['run']) => this.#tools.set(def.name, { def, run });

    add(
      {
        name: 'lookup',
        description: 'Looks a key up in the directory.',
        inputSchema: object({ key: { type: 'string' }, options: object({ limit: { type: 'integer', minimum: 1 } }, ['limit']) }, ['key']),
        annotations: { readOnlyHint: true },
      },
      async ({ key }) => text(`lookup ${String(key)}: found`),
    );
    add(
      {
        name: 'append_line',
        description: 'Appends one line to the log file of this server.',
        inputSchema: object({ line: { type: 'string', minLength: 1 } }, ['line']),
        annotations: { readOnlyHint: false, destructiveHint: false },
      },
      async ({ line }) => {
        if (!options.appendFile) return { isError: true, content: [{ type: 'text', text: 'no append file configured' }] };
        await appendFile(options.appendFile, `${String(line)}\n`);
        // A slow way back after the write (a test stops the client between the effect and its result).
        if (options.appendDelayMs) await new Promise((r) => setTimeout(r, options.appendDelayMs));
        return text('appended');
      },
    );
    add({ name: 'draw', description: 'Draws a dot.', inputSchema: object({}) }, async () => ({
      content: [
        { type: 'text', text: 'a red dot' },
        { type: 'image', data: DOT_PNG, mimeType: 'image/png' },
      ],
    }));
    add({ name: 'doc', description: 'Returns two embedded resources.', inputSchema: object({}) }, async () => ({
      content: [
        { type: 'resource', resource: { uri: 'file:///notes/readme.md', mimeType: 'text/markdown', text: '# Readme\n' } },
        { type: 'resource', resource: { uri: 'file:///data/blob', mimeType: 'application/octet-stream', blob: BLOB_BYTES.toString('base64') } },
      ],
    }));
    add({ name: 'fail', description: 'Always fails.', inputSchema: object({}) }, async () => ({
      isError: true,
      content: [{ type: 'text', text: 'the backend said no' }],
    }));
    add({ name: 'sleep', description: 'Sleeps for ms milliseconds.', inputSchema: object({ ms: { type: 'integer', minimum: 0 } }, ['ms']) }, (args, signal) => {
      this.slept++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve(text(`slept ${String(args.ms)} ms`)), Number(args.ms));
        signal.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            this.cancelled++;
            reject(new Error('cancelled'));
          },
          { once: true },
        );
      });
    });
    add(
      {
        name: 'env',
        description: 'Reads an environment variable, or lists their names.',
        inputSchema: object({ name: { type: 'string' } }),
        annotations: { readOnlyHint: true },
      },
      async ({ name }) => text(typeof name === 'string' ? (process.env[name] ?? '(unset)') : Object.keys(process.env).sort().join(',')),
    );
    add({ name: 'pid', description: 'The server process id.', inputSchema: object({}), annotations: { readOnlyHint: true } }, async () =>
      text(String(process.pid)),
    );
    add({ name: LONG_TOOL, description: 'A tool with a long name.', inputSchema: object({}), annotations: { readOnlyHint: true } }, async () =>
      text('the long one answered'),
    );
    add(
      { name: 'add_tool', description: 'Adds a tool and tells the clients.', inputSchema: object({ name: { type: 'string' } }, ['name']) },
      async ({ name }) => {
        await this.addTool(String(name));
        return text(`added ${String(name)}`);
      },
    );
  }

  /** Registers a tool answering "I am <name>" and sends notifications/tools/list_changed to every client. */
  async addTool(name: string): Promise<void> {
    this.#tools.set(name, { def: { name, description: `Added at run time: ${name}.`, inputSchema: object({}) }, run: async () => text(`I am ${name}`) });
    await Promise.all([...this.#servers].map((s) => s.sendToolListChanged().catch(() => undefined)));
  }

  /** A new SDK server over these tools, for one connection. */
  createServer(): Server {
    const server = new Server({ name: 'fake-mcp', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    server.setRequestHandler(ListToolsRequestSchema, async (request) => {
      const all = [...this.#tools.values()].map((t) => t.def);
      const start = Number(request.params?.cursor ?? 0);
      const end = start + this.#pageSize;
      return { tools: all.slice(start, end), ...(end < all.length ? { nextCursor: String(end) } : {}) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const tool = this.#tools.get(request.params.name);
      if (!tool) return { isError: true, content: [{ type: 'text', text: `no tool ${request.params.name}` }] };
      return tool.run(request.params.arguments ?? {}, extra.signal);
    });
    server.onclose = () => this.#servers.delete(server);
    this.#servers.add(server);
    return server;
  }
}

export interface FakeMcpHttp {
  readonly url: string;
  readonly port: number;
  readonly tools: FakeMcpTools;
  /** Every request, to check what the client sent. */
  readonly requests: { method: string; path: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/**
 * Serves `tools` on http://127.0.0.1:<port>/mcp: Streamable HTTP (sessions), or only the older
 * HTTP+SSE transport (`sse`: GET /mcp is the event stream, POST /messages the requests; a POST to
 * /mcp is 405, as such servers answer a Streamable HTTP client).
 */
export async function startFakeMcpHttp(tools: FakeMcpTools, options: { mode?: 'streamable' | 'sse'; port?: number } = {}): Promise<FakeMcpHttp> {
  const mode = options.mode ?? 'streamable';
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const sseSessions = new Map<string, SSEServerTransport>();
  const requests: FakeMcpHttp['requests'] = [];

  const http: HttpServer = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      requests.push({ method: req.method ?? '', path: url.pathname, headers: req.headers });
      if (mode === 'sse') {
        if (url.pathname === '/mcp' && req.method === 'GET') {
          const transport = new SSEServerTransport('/messages', res);
          sseSessions.set(transport.sessionId, transport);
          res.on('close', () => sseSessions.delete(transport.sessionId));
          await tools.createServer().connect(transport);
          return;
        }
        if (url.pathname === '/messages' && req.method === 'POST') {
          const transport = sseSessions.get(url.searchParams.get('sessionId') ?? '');
          if (!transport) return void res.writeHead(404).end('no such session');
          await transport.handlePostMessage(req, res, await readJson(req));
          return;
        }
        return void res.writeHead(url.pathname === '/mcp' ? 405 : 404).end();
      }
      if (url.pathname !== '/mcp') return void res.writeHead(404).end();
      const sessionId = req.headers['mcp-session-id'];
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
      if (!transport) {
        if (sessionId !== undefined || req.method !== 'POST' || !isInitializeRequest(body)) {
          return void res
            .writeHead(sessionId !== undefined ? 404 : 400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no such session' }, id: null }));
        }
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, created),
        });
        created.onclose = () => {
          if (created.sessionId) sessions.delete(created.sessionId);
        };
        await tools.createServer().connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, body);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    tools,
    requests,
    async close() {
      await Promise.all([...sessions.values(), ...sseSessions.values()].map((t) => t.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw === '' ? undefined : JSON.parse(raw);
}
