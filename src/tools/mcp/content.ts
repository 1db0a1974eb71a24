import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { clip, formatBytes, formatDecimalBytes } from '../../lib/text.js';
import { ToolError } from '../types.js';
import { FileExistsError, type Workspace } from '../workspace.js';
import { sanitiseNamePart } from './names.js';

/** The parts of an MCP tools/call result we read (the SDK's CallToolResult, loosely). */
export interface McpCallResult {
  content?: readonly McpContent[];
  structuredContent?: unknown;
  isError?: boolean;
  /** Servers of the 2024-10-07 protocol answer this instead. */
  toolResult?: unknown;
}

type McpContent =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; data: string; mimeType: string }
  | { type: 'resource'; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: 'resource_link'; uri: string; name?: string; mimeType?: string }
  | { type: string; [key: string]: unknown };

export interface SaveTarget {
  readonly ws: Workspace;
  /** Folder and file names come from these, sanitised: mcp/<server>/<tool>-<n>.<ext>. */
  readonly server: string;
  readonly tool: string;
}

/** ATTACHMENT_MAX_BYTES's default: the cap on each image, audio clip and resource a result may save. */
export const MEDIA_MAX_BYTES_DEFAULT = 20_000_000;

/**
 * The text the model reads for one result: text parts joined; images, audio and embedded
 * resources saved into the workspace and named ("[image saved: mcp/fs/draw-1.png, 12 KB]").
 * One over `maxBytes` (ATTACHMENT_MAX_BYTES) is neither decoded nor saved, only named as left out.
 * An `isError` result is thrown as a ToolError carrying the server's text.
 */
export async function resultText(result: McpCallResult, target: SaveTarget, maxBytes = MEDIA_MAX_BYTES_DEFAULT): Promise<string> {
  const parts = result.content ?? [];
  if (result.isError === true) {
    const message = parts
      .filter(isText)
      .map((p) => p.text)
      .join('\n')
      .trim();
    throw new ToolError(message === '' ? 'the tool reported an error and gave no message' : message);
  }
  const lines: string[] = [];
  for (const part of parts) lines.push(await describePart(part, target, maxBytes));
  if (lines.length === 0 && result.structuredContent !== undefined) lines.push(JSON.stringify(result.structuredContent));
  if (lines.length === 0 && result.toolResult !== undefined)
    lines.push(typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult));
  return lines.length === 0 ? '(no output)' : lines.join('\n');
}

async function describePart(part: McpContent, target: SaveTarget, maxBytes = MEDIA_MAX_BYTES_DEFAULT): Promise<string> {
  if (isText(part)) return part.text;
  if ((part.type === 'image' || part.type === 'audio') && typeof part.data === 'string') {
    const size = base64Bytes(part.data);
    if (size > maxBytes) return `[${part.type} left out: ${tooLarge(size, maxBytes)}]`;
    const mimeType = typeof part.mimeType === 'string' ? part.mimeType : '';
    const saved = await save(target, Buffer.from(part.data, 'base64'), extensionOf(mimeType));
    return `[${part.type} saved: ${saved.path}, ${formatBytes(saved.bytes)}]`;
  }
  if (part.type === 'resource' && typeof part.resource === 'object' && part.resource !== null) {
    const r = part.resource as { uri?: unknown; mimeType?: unknown; text?: unknown; blob?: unknown };
    const uri = typeof r.uri === 'string' ? r.uri : '';
    const from = uri ? `, from ${clip(uri, 200)}` : '';
    const size = typeof r.blob === 'string' ? base64Bytes(r.blob) : typeof r.text === 'string' ? Buffer.byteLength(r.text, 'utf8') : 0;
    if (size > maxBytes) return `[resource left out: ${tooLarge(size, maxBytes)}${from}]`;
    const bytes = typeof r.blob === 'string' ? Buffer.from(r.blob, 'base64') : Buffer.from(typeof r.text === 'string' ? r.text : '', 'utf8');
    const saved = await save(target, bytes, extensionOf(typeof r.mimeType === 'string' ? r.mimeType : '', uri));
    return `[resource saved: ${saved.path}, ${formatBytes(saved.bytes)}${from}]`;
  }
  if (part.type === 'resource_link' && typeof part.uri === 'string') {
    return `[resource link: ${clip(part.uri, 200)}${typeof part.name === 'string' ? ` (${clip(part.name, 100)})` : ''}]`;
  }
  return `[${clip(String(part.type), 40)} content left out]`;
}

/** The bytes base64 `data` decodes to, from its length alone (whitespace counted: never less than the truth). */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** "31.2 MB, over the 20 MB limit (ATTACHMENT_MAX_BYTES)": decimal units, as the variable is set. */
function tooLarge(size: number, maxBytes: number): string {
  return `${formatDecimalBytes(size)}, over the ${formatDecimalBytes(maxBytes)} limit (ATTACHMENT_MAX_BYTES)`;
}

function isText(part: McpContent): part is { type: 'text'; text: string } {
  return part.type === 'text' && typeof (part as { text?: unknown }).text === 'string';
}

/** Writes `bytes` to the first free mcp/<server>/<tool>-<n>.<ext>; never overwrites, never leaves the workspace. */
async function save(target: SaveTarget, bytes: Buffer, ext: string): Promise<{ path: string; bytes: number }> {
  const folder = `mcp/${sanitiseNamePart(target.server).slice(0, 64)}`;
  const base = sanitiseNamePart(target.tool).slice(0, 64);
  let n = nextNumber(await readdir(await target.ws.makeFolder(folder)), base);
  for (;;) {
    const rel = `${folder}/${base}-${n}.${ext}`;
    try {
      await target.ws.writeFile(rel, bytes, 'create');
      return { path: rel, bytes: bytes.length };
    } catch (err) {
      if (!(err instanceof FileExistsError)) throw err;
      n++;
    }
  }
}

/** One more than the highest <base>-<n>.* already there. */
function nextNumber(names: readonly string[], base: string): number {
  let max = 0;
  for (const name of names) {
    if (!name.startsWith(`${base}-`)) continue;
    const n = Number.parseInt(name.slice(base.length + 1), 10);
    if (Number.isSafeInteger(n) && n > max) max = n;
  }
  return max + 1;
}

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/svg+xml': 'svg',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'text/plain': 'txt',
  'text/markdown': 'md',
  'text/html': 'html',
  'text/csv': 'csv',
  'application/json': 'json',
  'application/pdf': 'pdf',
  'application/xml': 'xml',
  'text/xml': 'xml',
  'application/zip': 'zip',
};

/** From the media type, else the URI's own extension, else the media subtype if it is a plain word, else "bin". */
export function extensionOf(mimeType: string, uri = ''): string {
  const type = mimeType.split(';')[0]!.trim().toLowerCase();
  const known = EXTENSIONS[type];
  if (known) return known;
  let fromUri = '';
  try {
    fromUri = path.posix.extname(new URL(uri).pathname).slice(1);
  } catch {
    fromUri = path.posix.extname(uri).slice(1);
  }
  if (/^[A-Za-z0-9]{1,8}$/.test(fromUri)) return fromUri.toLowerCase();
  const subtype = type.split('/')[1] ?? '';
  return /^[a-z0-9]{1,8}$/.test(subtype) ? subtype : type.startsWith('text/') ? 'txt' : 'bin';
}
