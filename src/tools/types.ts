import type { z } from 'zod';

/**
 * A workspace tool. Defined once: `schema` is both the model's JSON schema (via zod's
 * toJSONSchema) and the validator of the model's arguments.
 *
 * `execute` receives arguments that already passed `schema`. It reports a failure the model
 * should read (file missing, snippet ambiguous, path outside the workspace) by throwing a
 * `ToolError`; anything else it throws is also turned into an error result by `runToolCall`,
 * never thrown through the agent loop.
 */
export interface Tool<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly schema: S;
  /** The model's JSON schema as given (an MCP server's inputSchema); then `schema` only validates. */
  readonly inputSchema?: Record<string, unknown>;
  /**
   * The tool only reads (list, read, search): a run that resumes a turn may simply run it again
   * when its earlier start has no recorded result. Any other tool is side-effecting.
   */
  readonly readOnly?: boolean;
  /** Its own outer deadline instead of TOOL_TIMEOUT_MS (a command has its own timeout_s, up to EXEC_MAX_TIMEOUT_S). */
  readonly timeoutMs?: number;
  /** Every call waits for a person's approval, whatever the tool policy says (an MCP server's `approve`). */
  readonly needsApproval?: true;
  execute(args: z.infer<S>, ctx: ToolContext): Promise<string>;
}

export interface ToolContext {
  /** Aborted by /stop, an operator's cancel or the loss of the job's lock. */
  readonly signal: AbortSignal;
}

/** What the model reads back as the `tool` message content, plus a short line for narration. */
export interface ToolResult {
  readonly ok: boolean;
  /** The tool message content (bounded in size). Errors start with "Error:". */
  readonly content: string;
  /** One short human line for progress narration, e.g. "read notes/meeting.md (1.2 KB)". */
  readonly summary: string;
}

/** A failure the model caused and can fix; its message is shown to the model as is. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
}
