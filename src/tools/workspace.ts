import { createHash } from 'node:crypto';
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './types.js';
import { ensureFolder, makeFolderInside, removeInside, writeInside, type WriteMode, type WriteResult } from './workspace-files.js';

export { FileExistsError, type WriteMode, type WriteResult } from './workspace-files.js';

/**
 * The one place where a model-supplied path becomes a file-system path. Every tool resolves
 * through here, so refusal (absolute, `..`, NUL, symlinks leading out) happens once. Reads may
 * follow a link that stays inside; every write goes through `writeFile` / `makeFolder` /
 * `removeFile`, which follow no link at all (workspace-files.ts).
 */
export class Workspace {
  /** Absolute root as configured (it may itself sit behind a symlink, e.g. /tmp on macOS). */
  readonly root: string;
  #realRoot: string | undefined;

  constructor(root: string) {
    if (!path.isAbsolute(root)) throw new Error(`Workspace root must be an absolute path, got "${root}"`);
    this.root = path.resolve(root);
  }

  /** The workspace of one session scope, e.g. `telegram:12345`, as a folder under `root`. */
  static forScope(root: string, scope: string): Workspace {
    return new Workspace(path.join(root, workspaceFolderName(scope)));
  }

  /** Creates the root if needed and returns its real path. */
  async realRoot(): Promise<string> {
    await ensureFolder(this.root);
    this.#realRoot = await realpath(this.root);
    return this.#realRoot;
  }

  /** The absolute real path of `input` (relative to the root), or a ToolError saying why not. */
  async resolve(input: string): Promise<string> {
    const rel = normaliseRelative(input);
    const root = await this.realRoot();
    if (rel === '.') return root;

    // Walk component by component from the real root: a symlink anywhere must stay inside,
    // and the first missing component ends the walk (the rest is created later, lexically inside).
    const parts = rel.split('/');
    let current = root;
    for (let i = 0; i < parts.length; i++) {
      const next = path.join(current, parts[i]!);
      let isLink: boolean;
      try {
        isLink = (await lstat(next)).isSymbolicLink();
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'ENOENT' || code === 'ENOTDIR') return path.join(next, ...parts.slice(i + 1));
        throw new ToolError(`cannot access ${input}: ${code ?? String(err)}`);
      }
      if (!isLink) {
        current = next;
        continue;
      }
      let target: string;
      try {
        target = await realpath(next);
      } catch (err) {
        // A dangling link could point anywhere once its target is created: refuse it.
        throw new ToolError(`${input} goes through a broken symlink (${errnoCode(err) ?? 'unresolvable'})`);
      }
      if (!isInside(root, target)) throw new ToolError(`${input} is outside the workspace (through a symlink)`);
      current = target;
    }
    return current;
  }

  /** Writes a file at `input` (relative to the root), creating its folders; see WriteMode. */
  async writeFile(input: string, content: string | Uint8Array, mode: WriteMode, signal?: AbortSignal): Promise<WriteResult> {
    return writeInside(await this.realRoot(), componentsOf(input), input, content, mode, signal);
  }

  /** Creates the folder `input` and those above it; returns its absolute path. */
  async makeFolder(input: string): Promise<string> {
    return makeFolderInside(await this.realRoot(), componentsOf(input), input);
  }

  /** Removes the file `input` (a link itself, never its target). False when it was not there. */
  async removeFile(input: string): Promise<boolean> {
    return removeInside(await this.realRoot(), componentsOf(input), input);
  }

  /** `abs` relative to the root, with '/' separators, for display ("." for the root). */
  relative(abs: string): string {
    for (const base of [this.#realRoot, this.root]) {
      if (base === undefined || !isInside(base, abs)) continue;
      const rel = path.relative(base, abs);
      return rel === '' ? '.' : rel.split(path.sep).join('/');
    }
    return abs;
  }
}

/**
 * One safe, collision-free folder name for a session scope: bytes outside [A-Za-z0-9._-] are
 * percent-encoded (so decodeURIComponent reverses it), "." and ".." are encoded too, and
 * overlong names end in "~" plus a hash ("~" never appears otherwise, so no collisions).
 */
export function workspaceFolderName(scope: string): string {
  if (scope === '') throw new Error('Session scope is empty');
  let name = '';
  for (const byte of Buffer.from(scope, 'utf8')) {
    const ch = String.fromCharCode(byte);
    name += /[A-Za-z0-9._-]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (name === '.' || name === '..') name = name.replaceAll('.', '%2E');
  if (name.length > 200) {
    name = `${name.slice(0, 150)}~${createHash('sha256').update(scope).digest('hex').slice(0, 40)}`;
  }
  return name;
}

function componentsOf(input: string): string[] {
  const rel = normaliseRelative(input);
  return rel === '.' ? [] : rel.split('/');
}

/** Lexical checks; returns a normalised relative path with '/' separators, or '.'. */
function normaliseRelative(input: string): string {
  if (input.includes('\0')) throw new ToolError('path contains a NUL byte');
  if (input.trim() === '') throw new ToolError('path is empty; use "." for the workspace root');
  if (path.isAbsolute(input) || /^[A-Za-z]:[\\/]/.test(input)) {
    throw new ToolError(`${input} is an absolute path; paths are relative to the workspace root`);
  }
  if (input === '~' || input.startsWith('~/')) {
    throw new ToolError(`${input}: "~" is not expanded; paths are relative to the workspace root`);
  }
  const normal = path.posix.normalize(input).replace(/\/+$/, '') || '.';
  if (normal === '..' || normal.startsWith('../')) throw new ToolError(`${input} is outside the workspace`);
  return normal;
}

function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

export function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
