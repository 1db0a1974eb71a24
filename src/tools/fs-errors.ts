import { stat, readFile } from 'node:fs/promises';
import { formatBytes } from '../lib/text.js';
import { looksBinary } from './text.js';
import { ToolError } from './types.js';
import { errnoCode } from './workspace.js';

const MESSAGES: Record<string, string> = {
  ENOENT: 'does not exist',
  EISDIR: 'is a directory',
  ENOTDIR: 'has a parent that is not a directory',
  EACCES: 'is not accessible (permission denied)',
  EPERM: 'is not accessible (operation not permitted)',
  ENAMETOOLONG: 'is too long a name',
  ELOOP: 'has too many levels of symlinks',
};

/** A ToolError naming `display` for common fs error codes; other errors pass through unchanged. */
export function fsError(err: unknown, display: string): unknown {
  const message = MESSAGES[errnoCode(err) ?? ''];
  return message ? new ToolError(`${display} ${message}`) : err;
}

/** Reads a regular text file of at most `maxBytes`, or throws a ToolError saying why not. */
export async function readTextFile(abs: string, display: string, maxBytes: number, signal: AbortSignal): Promise<string> {
  const info = await stat(abs).catch((err: unknown) => {
    throw fsError(err, display);
  });
  if (info.isDirectory()) throw new ToolError(`${display} is a directory; use list_files`);
  if (!info.isFile()) throw new ToolError(`${display} is not a regular file`);
  if (info.size > maxBytes) {
    throw new ToolError(`${display} is ${formatBytes(info.size)}, over the ${formatBytes(maxBytes)} limit`);
  }
  const buf = await readFile(abs, { signal }).catch((err: unknown) => {
    throw fsError(err, display);
  });
  if (buf.length > maxBytes) throw new ToolError(`${display} grew over the ${formatBytes(maxBytes)} limit`);
  if (looksBinary(buf)) throw new ToolError(`${display} looks like a binary file; only text files can be read`);
  return buf.toString('utf8');
}
