import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { link, lstat, mkdir, open, readlink, realpath, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './types.js';

/**
 * The only module that writes under WORKSPACE_ROOT (an architecture test keeps it so). A workspace
 * holds whatever its commands planted, links included, so a write here never follows a link on
 * any path component: each folder is walked with lstat from the real root (and created one level
 * at a time), the content goes to an exclusively created temp file (O_EXCL | O_NOFOLLOW) whose
 * real location is checked by its descriptor, and only then is it renamed or linked into place.
 * A target that is a link, a folder or any other non-regular file is refused.
 */

/**
 * `replace`: the file is the old one or the new one, never a part (an existing file keeps its
 * permission bits). `create`: a new file only; an existing name is an `exists` error (callers
 * pick the next free name). `once`: like create, but an existing file is kept and counts as written.
 */
export type WriteMode = 'replace' | 'create' | 'once';

export interface WriteResult {
  /** The file's absolute path. */
  abs: string;
  /** It was there before (replace: overwritten; once: kept as it was). */
  existed: boolean;
}

/** A `create` found the name taken. */
export class FileExistsError extends ToolError {
  readonly code = 'EEXIST';
}

const TEMP_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Writes `content` to `parts` (path components below the real root `root`, already lexically checked). */
export async function writeInside(
  root: string,
  parts: readonly string[],
  display: string,
  content: string | Uint8Array,
  mode: WriteMode,
  signal?: AbortSignal,
): Promise<WriteResult> {
  if (parts.length === 0) throw new ToolError(`${display} is a directory`);
  const dir = await folderInside(root, parts.slice(0, -1), display, true);
  const name = parts[parts.length - 1]!;
  const abs = path.join(dir, name);
  const before = await lstatOrNull(abs);
  if (before) {
    refuseNonRegular(before, display);
    if (mode === 'create') throw new FileExistsError(`${display} already exists`);
    if (mode === 'once') return { abs, existed: true };
  }
  const temp = path.join(dir, `.${name.slice(0, 100)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, TEMP_FLAGS, 0o666);
  try {
    try {
      await handle.writeFile(content, signal ? { signal } : {});
      if (before) await handle.chmod(before.mode & 0o7777);
      await verifyDescriptor(handle.fd, temp, dir, display);
    } finally {
      await handle.close();
    }
    signal?.throwIfAborted();
    if (mode === 'replace') {
      // rename replaces a link at the target rather than following it; the check above refused one anyway.
      await rename(temp, abs);
      return { abs, existed: before !== null };
    }
    try {
      await link(temp, abs);
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw err;
      if (mode === 'create') throw new FileExistsError(`${display} already exists`);
      return { abs, existed: true };
    }
    return { abs, existed: false };
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/** Creates the folder `parts` (and the ones above it) without following links; returns its absolute path. */
export async function makeFolderInside(root: string, parts: readonly string[], display: string): Promise<string> {
  return folderInside(root, parts, display, true);
}

/** Removes one file (never a folder; a link is removed itself, not its target). False when it was not there. */
export async function removeInside(root: string, parts: readonly string[], display: string): Promise<boolean> {
  if (parts.length === 0) throw new ToolError(`${display} is the workspace folder, not a file`);
  const dir = await folderInside(root, parts.slice(0, -1), display, false);
  const abs = path.join(dir, parts[parts.length - 1]!);
  const info = await lstatOrNull(abs);
  if (!info) return false;
  if (info.isDirectory()) throw new ToolError(`${display} is a folder`);
  await unlink(abs);
  return true;
}

/** Walks (and with `create`, makes) each folder of `parts` under `root`, refusing links and non-folders. */
async function folderInside(root: string, parts: readonly string[], display: string, create: boolean): Promise<string> {
  let dir = root;
  for (const part of parts) {
    const next = path.join(dir, part);
    let info = await lstatOrNull(next);
    if (!info && create) {
      await mkdir(next).catch((err: unknown) => {
        if (errno(err) !== 'EEXIST') throw err;
      });
      info = await lstatOrNull(next);
    }
    if (!info) throw new ToolError(`${display}: folder ${path.relative(root, next)} does not exist`);
    if (info.isSymbolicLink()) throw new ToolError(`${display} goes through a symlink (${path.relative(root, next)}); files are never written through links`);
    if (!info.isDirectory()) throw new ToolError(`${display} has a parent that is not a directory (${path.relative(root, next)})`);
    dir = next;
  }
  return dir;
}

/**
 * The temp file really is where the walk put it: a folder swapped for a link after the walk would
 * have sent it elsewhere. By descriptor where /proc shows it (Linux), else by the folder's realpath.
 */
async function verifyDescriptor(fd: number, temp: string, dir: string, display: string): Promise<void> {
  const where = await readlink(`/proc/self/fd/${fd}`).catch(() => undefined);
  const ok = where !== undefined ? where === temp : (await realpath(dir)) === dir;
  if (!ok) throw new ToolError(`${display}: its folder changed while it was written (a link appeared); not written`);
}

function refuseNonRegular(info: Stats, display: string): void {
  if (info.isSymbolicLink()) throw new ToolError(`${display} is a symlink; files are never written through links`);
  if (info.isDirectory()) throw new ToolError(`${display} is a directory`);
  if (!info.isFile()) throw new ToolError(`${display} is not a regular file`);
}

async function lstatOrNull(abs: string): Promise<Stats | null> {
  try {
    return await lstat(abs);
  } catch (err) {
    if (errno(err) === 'ENOENT') return null;
    throw err;
  }
}

function errno(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Makes the workspace folder itself (and WORKSPACE_ROOT above it): operator-owned paths, where links are the operator's choice. */
export async function ensureFolder(abs: string): Promise<void> {
  await mkdir(abs, { recursive: true });
}
