import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Workspace } from './workspace.js';

/** Listed, but never entered by a recursive walk. */
export const SKIP_DIRS: ReadonlySet<string> = new Set(['.git', 'node_modules']);

export interface WalkEntry {
  abs: string;
  /** Relative to the workspace root, '/' separators. */
  rel: string;
  kind: 'file' | 'dir' | 'symlink' | 'other';
  /** 1 for the entries of the start directory. */
  depth: number;
}

/**
 * Depth-first, name-sorted entries below `startAbs`. Symlinks are reported, never followed,
 * so a walk cannot leave the workspace or loop. Unreadable subdirectories are skipped.
 */
export async function* walk(ws: Workspace, startAbs: string, opts: { maxDepth: number; signal: AbortSignal }): AsyncGenerator<WalkEntry> {
  yield* walkDir(ws, startAbs, 1, opts, true);
}

async function* walkDir(
  ws: Workspace,
  dir: string,
  depth: number,
  opts: { maxDepth: number; signal: AbortSignal },
  isStart: boolean,
): AsyncGenerator<WalkEntry> {
  opts.signal.throwIfAborted();
  let names;
  try {
    names = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isStart) throw err;
    return;
  }
  names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const dirent of names) {
    const abs = path.join(dir, dirent.name);
    const kind = dirent.isSymbolicLink() ? 'symlink' : dirent.isDirectory() ? 'dir' : dirent.isFile() ? 'file' : 'other';
    yield { abs, rel: ws.relative(abs), kind, depth };
    if (kind === 'dir' && depth < opts.maxDepth && !SKIP_DIRS.has(dirent.name)) {
      yield* walkDir(ws, abs, depth + 1, opts, false);
    }
  }
}
