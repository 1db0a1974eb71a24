import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SseError, SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type Tool as ListedMcpTool } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { Logger } from '../../log.js';
import { clip } from '../../lib/text.js';
import { ToolError } from '../types.js';
import type { McpServerConfig } from './config.js';
import type { McpCallResult } from './content.js';
import { SchemaCompiler } from './validate.js';

export type McpState = 'connected' | 'connecting' | 'down';

/** One tool as the server listed it, with its arguments' validator compiled. */
export interface ListedTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly readOnly: boolean;
  readonly args: z.ZodType;
}

export interface ConnectionOptions {
  readonly log: Logger;
  /** The deadline of a call, and of connecting and listing (those get at least START_FLOOR_MS). */
  readonly timeoutMs: number;
  /** Reconnect delays: initialMs, doubled after each failure, at most maxMs (plus up to 20 % jitter). */
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
}

const CLIENT_INFO = { name: 'switchboard', version: '0.1.0' };
/** The SDK's own request timeout stays behind runToolCall's deadline, so that one reports the timeout. */
const SDK_TIMEOUT_SLACK_MS = 5_000;
/**
 * Starting and listing may take longer than a call: a stdio server started through npx or tsx
 * fetches or compiles first, on a busy machine for seconds. A call's timeout alone would count it down.
 */
const START_FLOOR_MS = 10_000;
/** A server that pages forever is cut off here. */
const MAX_LIST_PAGES = 100;

/**
 * One configured server: connects, lists tools, follows `tools/list_changed`, and reconnects
 * with backoff when it fails or dies. Never throws out of its own lifecycle: failure is a state.
 */
export class McpConnection {
  readonly config: McpServerConfig;
  readonly #options: ConnectionOptions;
  #state: McpState = 'connecting';
  #error: string | undefined;
  #tools: readonly ListedTool[] = [];
  #client: Client | undefined;
  /** Bumped by every attempt and every failure: callbacks of an older attempt are ignored. */
  #generation = 0;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #refreshing: Promise<void> | undefined;
  #refreshAgain = false;
  /** The last line a stdio child wrote to stderr in this attempt: the likely reason it died. */
  #lastStderr: string | undefined;
  readonly #closing = new Set<Promise<void>>();
  /** Tools whose left-out patterns were warned about (tool name and patterns): each once per process, not at every list. */
  readonly #warnedPatterns = new Set<string>();

  constructor(config: McpServerConfig, options: ConnectionOptions) {
    this.config = config;
    this.#options = options;
  }

  get name(): string {
    return this.config.name;
  }
  get state(): McpState {
    return this.#state;
  }
  get error(): string | undefined {
    return this.#error;
  }
  get tools(): readonly ListedTool[] {
    return this.#state === 'connected' ? this.#tools : [];
  }
  get #startTimeoutMs(): number {
    return Math.max(this.#options.timeoutMs, START_FLOOR_MS);
  }

  get timeoutMs(): number {
    return this.#options.timeoutMs;
  }

  /** The first attempt; settles when it connected or failed (a failure schedules the next). */
  start(): Promise<void> {
    return this.#connect();
  }

  /** Calls one tool. A server that is not connected, or that drops the call, is a ToolError. */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult> {
    const client = this.#client;
    const generation = this.#generation;
    if (this.#state !== 'connected' || !client) throw new ToolError(`the MCP server ${this.name} is not connected`);
    // The SDK never removes its abort listener: give it a signal of this call only.
    const local = new AbortController();
    const forward = () => local.abort(signal.reason);
    signal.addEventListener('abort', forward, { once: true });
    try {
      signal.throwIfAborted();
      return (await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: local.signal,
        timeout: this.#options.timeoutMs + SDK_TIMEOUT_SLACK_MS,
      })) as McpCallResult;
    } catch (err) {
      if (signal.aborted) throw err;
      if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) {
        throw new ToolError(`the MCP server ${this.name} went away during the call; it may have done part of its work`);
      }
      if (isTransportFailure(err)) {
        this.#fail(generation, err);
        throw new ToolError(`the MCP server ${this.name} could not be reached (${this.#redact(messageOf(err))}); it may have done part of its work`);
      }
      if (err instanceof McpError || err instanceof StreamableHTTPError) {
        throw new ToolError(`the MCP server ${this.name} refused the call: ${this.#redact(messageOf(err))}`);
      }
      throw err;
    } finally {
      signal.removeEventListener('abort', forward);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#generation++;
    clearTimeout(this.#timer);
    this.#release(true);
    this.#state = 'down';
    this.#error = 'closed';
    await Promise.all(this.#closing);
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const generation = ++this.#generation;
    this.#state = 'connecting';
    try {
      const client = await this.#open(generation);
      const tools = await this.#list(client);
      if (generation !== this.#generation) return;
      this.#tools = tools;
      this.#state = 'connected';
      this.#error = undefined;
      this.#failures = 0;
      this.#options.log.info({ mcpServer: this.name, tools: tools.length }, 'MCP server connected');
    } catch (err) {
      this.#fail(generation, err);
    }
  }

  /** Connects a client over the configured transport; `auto` falls back to SSE on a 4xx from Streamable HTTP. */
  async #open(generation: number): Promise<Client> {
    const config = this.config;
    if (config.kind === 'stdio') {
      const transport = new StdioClientTransport({
        command: config.command,
        args: [...config.args],
        env: { ...config.env },
        ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
        // Its stderr is read (a full pipe would block it) and logged at debug: it may print anything.
        // Only its last line goes into the warning when it dies, its known secrets blanked out.
        stderr: 'pipe',
      });
      this.#lastStderr = undefined;
      transport.stderr?.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (line.trim() === '') continue;
          this.#lastStderr = clip(this.#redact(line.trim()), 200);
          this.#options.log.debug({ mcpServer: this.name, line: clip(this.#redact(line), 500) }, 'MCP server stderr');
        }
      });
      return this.#attach(generation, transport);
    }
    const url = new URL(config.url);
    const requestInit = { headers: { ...config.headers } };
    if (config.transport === 'sse') return this.#attach(generation, new SSEClientTransport(url, { requestInit }));
    try {
      return await this.#attach(generation, new StreamableHTTPClientTransport(url, { requestInit }));
    } catch (err) {
      const fallBack =
        config.transport === 'auto' &&
        err instanceof StreamableHTTPError &&
        err.code !== undefined &&
        err.code >= 400 &&
        err.code < 500 &&
        err.code !== 401 &&
        err.code !== 403;
      if (!fallBack || generation !== this.#generation) throw err;
      this.#options.log.info({ mcpServer: this.name, status: err.code }, 'MCP server does not speak Streamable HTTP; trying SSE');
      return this.#attach(generation, new SSEClientTransport(url, { requestInit }));
    }
  }

  async #attach(generation: number, transport: Transport): Promise<Client> {
    if (generation !== this.#generation) throw new Error('superseded');
    this.#release();
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    this.#client = client;
    // A failed connect closes the client too; that failure is the connect's to report.
    let established = false;
    client.onclose = () => {
      if (established && client === this.#client) this.#fail(generation, new Error('the connection closed'));
    };
    client.onerror = (err) => this.#options.log.debug({ mcpServer: this.name, error: clip(this.#redact(messageOf(err)), 300) }, 'MCP transport error');
    // Our own handler: the SDK's built-in refresh reads only the first page of tools/list.
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (client === this.#client && this.#state === 'connected') void this.#refresh(client, generation);
    });
    try {
      await client.connect(transport, { timeout: this.#startTimeoutMs });
      if (!client.transport) throw new Error('the connection closed while starting');
      established = true;
    } catch (err) {
      if (client === this.#client) this.#release();
      throw err;
    }
    return client;
  }

  async #list(client: Client): Promise<ListedTool[]> {
    const listed: ListedMcpTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: this.#startTimeoutMs });
      listed.push(...result.tools);
      cursor = result.nextCursor;
      if (cursor === undefined) break;
    }
    const compiler = new SchemaCompiler();
    const seen = new Set<string>();
    const tools: ListedTool[] = [];
    for (const tool of listed) {
      if (seen.has(tool.name)) continue;
      seen.add(tool.name);
      const inputSchema = tool.inputSchema as Record<string, unknown>;
      const { schema, problem, dropped } = compiler.compile(inputSchema);
      if (problem)
        this.#options.log.warn({ mcpServer: this.name, tool: tool.name, problem }, 'MCP tool input schema does not compile; its arguments go unchecked');
      const warnKey = dropped && JSON.stringify([tool.name, dropped.map((d) => [d.at, d.pattern])]);
      if (warnKey && !this.#warnedPatterns.has(warnKey)) {
        this.#warnedPatterns.add(warnKey);
        this.#options.log.warn(
          { mcpServer: this.name, tool: tool.name, patterns: dropped },
          'MCP tool input schema: patterns left out (not supported by the linear-time regex engine)',
        );
      }
      tools.push({ name: tool.name, description: tool.description ?? '', inputSchema, readOnly: tool.annotations?.readOnlyHint === true, args: schema });
    }
    return tools;
  }

  /** Re-lists after `list_changed`; notifications during a refresh cause one more. A failed refresh keeps the old list. */
  #refresh(client: Client, generation: number): Promise<void> {
    if (this.#refreshing) {
      this.#refreshAgain = true;
      return this.#refreshing;
    }
    this.#refreshing = (async () => {
      do {
        this.#refreshAgain = false;
        try {
          const tools = await this.#list(client);
          if (generation !== this.#generation) return;
          this.#tools = tools;
          this.#options.log.info({ mcpServer: this.name, tools: tools.length }, 'MCP server tools changed');
        } catch (err) {
          if (generation !== this.#generation) return;
          this.#options.log.warn(
            { mcpServer: this.name, error: clip(this.#redact(messageOf(err)), 300) },
            'MCP tools/list failed after list_changed; keeping the old list',
          );
        }
      } while (this.#refreshAgain);
    })().finally(() => (this.#refreshing = undefined));
    return this.#refreshing;
  }

  /** The attempt `generation` failed or its connection died: down, tools out, next attempt after a backoff. */
  #fail(generation: number, err: unknown): void {
    if (generation !== this.#generation || this.#closed) return;
    this.#generation++;
    this.#release();
    const delay = Math.round(Math.min(this.#options.backoff.maxMs, this.#options.backoff.initialMs * 2 ** this.#failures) * (1 + Math.random() * 0.2));
    this.#failures++;
    this.#state = 'down';
    this.#error = clip(this.#redact(messageOf(err)), 300);
    const stderr = this.config.kind === 'stdio' && this.#lastStderr !== undefined ? { stderr: this.#lastStderr } : {};
    this.#options.log.warn({ mcpServer: this.name, error: this.#error, ...stderr, retryInMs: delay }, 'MCP server down');
    this.#timer = setTimeout(() => void this.#connect(), delay);
    this.#timer.unref();
  }

  /**
   * Closes the current client (a stdio child: stdin closed, then SIGTERM, then SIGKILL, by the SDK).
   * `endSession`: tell a Streamable HTTP server first (DELETE), so it need not wait for the session to expire.
   */
  #release(endSession = false): void {
    const client = this.#client;
    this.#client = undefined;
    if (!client) return;
    const transport = client.transport;
    const ending =
      endSession && transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined
        ? Promise.race([transport.terminateSession().catch(() => undefined), new Promise((r) => setTimeout(r, 1_000).unref())])
        : Promise.resolve();
    const closing: Promise<void> = ending
      .then(() => client.close())
      .catch(() => undefined)
      .finally(() => this.#closing.delete(closing));
    this.#closing.add(closing);
  }

  /** Error text with the values of this server's secrets blanked out. */
  #redact(message: string): string {
    let out = message;
    for (const secret of this.config.secrets) out = out.split(secret).join('[redacted]');
    return out;
  }
}

/** The connection is gone, not just this call: the network failed, or the server forgot our session (404). */
function isTransportFailure(err: unknown): boolean {
  if (err instanceof StreamableHTTPError) return err.code === 404 || err.code === undefined;
  return err instanceof TypeError && /fetch failed|network|socket/i.test(err.message);
}

/** One line: the SDK's HTTP errors get their status, fetch's "fetch failed" its cause (ECONNREFUSED…). */
function messageOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  let line = err.message.split('\n')[0]!.replace(/:\s*$/, '') || err.name;
  const status = (err as { code?: unknown }).code;
  if ((err instanceof StreamableHTTPError || err instanceof SseError) && typeof status === 'number' && !line.includes(String(status)))
    line += ` (HTTP ${status})`;
  const cause = err.cause as { code?: unknown; message?: unknown } | undefined;
  const why = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : undefined;
  if (why !== undefined && !line.includes(why)) line += ` (${clip(why, 100)})`;
  return line;
}
