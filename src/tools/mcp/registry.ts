import type { Logger } from '../../log.js';
import type { Tool } from '../types.js';
import type { Workspace } from '../workspace.js';
import type { McpConfig } from './config.js';
import { McpConnection, type ListedTool, type McpState } from './connection.js';
import { createMcpTools, type McpToolLimits } from './tools.js';

export interface McpStartOptions {
  readonly log: Logger;
  /** A server's call deadline when its entry has no timeoutMs (TOOL_TIMEOUT_MS). */
  readonly toolTimeoutMs: number;
  /** Reconnect delays after a failure: doubled from initialMs up to maxMs. Defaults 1 s and 30 s. */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
  /** The largest image, audio clip or resource a tool result may save (ATTACHMENT_MAX_BYTES; default its default). */
  readonly mediaMaxBytes?: number;
}

export interface McpServerStatus {
  readonly name: string;
  readonly state: McpState;
  readonly tools: number;
  /** Why it is down (secrets blanked out). */
  readonly error?: string;
}

/**
 * The MCP servers of one worker process: connected at start, each reconnecting on its own after a
 * failure. A server that is down only means its tools are left out of new requests.
 */
export class McpRegistry {
  readonly #connections: readonly McpConnection[];
  readonly #limits: McpToolLimits;

  private constructor(connections: readonly McpConnection[], limits: McpToolLimits) {
    this.#connections = connections;
    this.#limits = limits;
  }

  /** Connects to every server; resolves when each one's first attempt connected or failed (never rejects for a server). */
  static async start(config: McpConfig, options: McpStartOptions): Promise<McpRegistry> {
    const backoff = { initialMs: options.backoff?.initialMs ?? 1_000, maxMs: options.backoff?.maxMs ?? 30_000 };
    const connections = config.servers.map(
      (server) => new McpConnection(server, { log: options.log, timeoutMs: server.timeoutMs ?? options.toolTimeoutMs, backoff }),
    );
    await Promise.all(connections.map((c) => c.start()));
    return new McpRegistry(connections, options.mediaMaxBytes === undefined ? {} : { mediaMaxBytes: options.mediaMaxBytes });
  }

  /** The tools offered to a conversation on `platform`: connected servers offered there, filtered by include/exclude. */
  /** `servers`: only these servers' tools (an agent's `mcpServers`); absent: every server's. */
  toolsFor(ws: Workspace, platform: string, servers?: readonly string[]): Tool[] {
    const entries: { source: McpConnection; tool: ListedTool }[] = [];
    for (const source of this.#connections) {
      if (servers !== undefined && !servers.includes(source.name)) continue;
      const { platforms, tools: filter } = source.config;
      if (platforms !== undefined && !platforms.includes(platform)) continue;
      for (const tool of source.tools) {
        if (filter.include !== undefined && !filter.include.includes(tool.name)) continue;
        if (filter.exclude?.includes(tool.name)) continue;
        entries.push({ source, tool });
      }
    }
    return createMcpTools(entries, ws, this.#limits);
  }

  status(): McpServerStatus[] {
    return this.#connections.map((c) => ({
      name: c.name,
      state: c.state,
      tools: c.tools.length,
      ...(c.error === undefined || c.state === 'connected' ? {} : { error: c.error }),
    }));
  }

  /** Stops every connection and stdio child (through the SDK's own handles) and waits for them. */
  async close(): Promise<void> {
    await Promise.all(this.#connections.map((c) => c.close()));
  }
}
