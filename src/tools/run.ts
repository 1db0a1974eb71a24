import type { z } from 'zod';
import { clip, formatBytes } from '../lib/text.js';
import { ToolError, type Tool, type ToolResult } from './types.js';
import { anySignal } from '../lib/abort.js';

/** Final safety cap on a result's content, whatever a tool returns. */
export const MAX_RESULT_CHARS = 60_000;
/** How much of the model's bad input is quoted back to it. */
const MAX_ECHO_CHARS = 500;

export interface RunToolOptions {
  /**
   * The call's deadline. The tool's signal aborts when it passes, and the call resolves as timed
   * out then even if the tool ignores its signal (the tool is abandoned, not awaited).
   */
  timeoutMs?: number;
}

/** Runs one model tool call. Never throws: every failure becomes an `ok: false` result. */
export async function runToolCall(
  tools: readonly Tool[],
  call: { name: string; arguments: string },
  signal: AbortSignal,
  options: RunToolOptions = {},
): Promise<ToolResult> {
  const name = clip(String(call.name), 80);
  const tool = tools.find((t) => t.name === call.name);
  if (!tool) {
    const available = tools.map((t) => t.name).join(', ') || '(none)';
    return failure(name, '', `unknown tool "${name}". Available tools: ${available}`, 'unknown tool');
  }

  let args: unknown;
  const raw = typeof call.arguments === 'string' ? call.arguments : String(call.arguments);
  try {
    args = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch (err) {
    const detail = `arguments are not valid JSON (${(err as Error).message}). You sent: ${clip(raw, MAX_ECHO_CHARS)}`;
    return failure(name, '', detail, 'invalid JSON arguments');
  }
  args = dropNulls(args);
  const target = describeTarget(args);

  const parsed = tool.schema.safeParse(args);
  if (!parsed.success) {
    const detail = `invalid arguments for ${tool.name}:\n${formatIssues(parsed.error.issues)}\nYou sent: ${clip(raw, MAX_ECHO_CHARS)}`;
    const paths = [...new Set(parsed.error.issues.map((i) => i.path.join('.') || '(arguments)'))].join(', ');
    return failure(name, target, detail, `invalid arguments (${clip(paths, 60)})`);
  }

  const timeoutMs = tool.timeoutMs ?? options.timeoutMs;
  const deadline = timeoutMs === undefined ? undefined : startDeadline(timeoutMs);
  const linked = deadline && anySignal([signal, deadline.signal]);
  try {
    signal.throwIfAborted();
    const running = tool.execute(parsed.data, { signal: linked?.signal ?? signal });
    const content = await (deadline ? untilAborted(running, deadline.signal) : running);
    const bounded = content.length > MAX_RESULT_CHARS ? `${content.slice(0, MAX_RESULT_CHARS)}\n[Result cut at ${MAX_RESULT_CHARS} characters.]` : content;
    return { ok: true, content: bounded, summary: okSummary(name, target, bounded) };
  } catch (err) {
    // The caller's abort wins over the deadline: a stopped run reports "cancelled", not a timeout.
    if (signal.aborted) return failure(name, target, 'cancelled', 'cancelled');
    if (deadline?.signal.aborted) {
      const detail = `${tool.name} timed out after ${formatSeconds(deadline.ms)} s; it may have done part of its work. Try a smaller or narrower request.`;
      return failure(name, target, detail, 'timed out');
    }
    const message = err instanceof ToolError ? err.message : describeError(err);
    return failure(name, target, message, clip(message.split('\n')[0]!, 80));
  } finally {
    deadline?.cancel();
    linked?.dispose();
  }
}

/** An AbortSignal that aborts (with a TimeoutError, as AbortSignal.timeout does) after `ms`, unless cancelled first. */
function startDeadline(ms: number): { ms: number; signal: AbortSignal; cancel(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`timed out after ${ms} ms`, 'TimeoutError')), ms);
  return { ms, signal: controller.signal, cancel: () => clearTimeout(timer) };
}

/**
 * Settles with `work`, or rejects as soon as `signal` aborts even if `work` never settles. The
 * abandoned promise keeps its handlers, so its later rejection is not an unhandled one.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** 60000 → "60", 1500 → "1.5". */
function formatSeconds(ms: number): string {
  return String(Number((ms / 1000).toFixed(1)));
}

function failure(name: string, target: string, message: string, short: string): ToolResult {
  return {
    ok: false,
    content: clip(`Error: ${message}`, MAX_RESULT_CHARS),
    summary: `${name}${target ? ` ${target}` : ''} → error: ${short}`,
  };
}

/** Tools whose result is workspace content: their summary shows its size, never the content (it goes to the chat). */
const CONTENT_TOOLS = new Set(['read_file', 'list_files', 'search_files']);

function okSummary(name: string, target: string, content: string): string {
  // A one-line status ("Created a.txt (12 bytes written)") says more than its size.
  const statusLine = !CONTENT_TOOLS.has(name) && !content.includes('\n') && content.length <= 100;
  const outcome = statusLine ? content : formatBytes(Buffer.byteLength(content));
  return `${name}${target ? ` ${target}` : ''} → ${outcome}`;
}

/** "notes/a.md" or "/TODO/ in notes", from the arguments the model sent. */
function describeTarget(args: unknown): string {
  if (typeof args !== 'object' || args === null) return '';
  const { path, pattern, command } = args as { path?: unknown; pattern?: unknown; command?: unknown };
  const parts: string[] = [];
  if (typeof command === 'string') parts.push(`\`${clip(command.replace(/\s+/g, ' '), 60)}\``);
  if (typeof pattern === 'string') parts.push(`/${clip(pattern, 40)}/`);
  if (typeof path === 'string') parts.push(typeof pattern === 'string' ? `in ${clip(path, 60)}` : clip(path, 60));
  return parts.join(' ');
}

function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 10)
    .map((issue) => `- ${issue.path.length > 0 ? issue.path.map(String).join('.') : '(arguments)'}: ${issue.message}`)
    .join('\n');
}

function describeError(err: unknown): string {
  if (err instanceof Error) return err.name && err.name !== 'Error' ? `${err.name}: ${err.message}` : err.message;
  return String(err);
}

/** Models often send `"offset": null` for "not given"; treat a top-level null as absent. */
function dropNulls(args: unknown): unknown {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return args;
  return Object.fromEntries(Object.entries(args).filter(([, v]) => v !== null));
}
