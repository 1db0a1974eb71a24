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
  /** Folders shown read-only at `at` (relative, e.g. `skills/pdf`) from `dir` (an absolute real path). */
  readonly readOnlyMounts: readonly ReadOnlyMount[];
  #realRoot: string | undefined;

  constructor(root: string, options: WorkspaceOptions = {}) {
    if (!path.isAbsolute(root)) throw new Error(`Workspace root must be an absolute path, got "${root}"`);
    this.root = path.resolve(root);
    this.readOnlyMounts = (options.readOnly ?? []).map(checkMount);
  }

  /** The workspace of one session scope, e.g. `telegram:12345`, as a folder under `root`. */
  static forScope(root: string, scope: string, options: WorkspaceOptions = {}): Workspace {
    return new Workspace(path.join(root, workspaceFolderName(scope)), options);
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
    const mount = this.#mountOf(rel);
    if (mount) {
      const below = rel === mount.at ? [] : rel.slice(mount.at.length + 1).split('/');
      return resolveInside(mount.dir, below, input, `${input} is outside ${mount.at} (through a symlink)`);
    }
    const root = await this.realRoot();
    return resolveInside(root, rel === '.' ? [] : rel.split('/'), input, `${input} is outside the workspace (through a symlink)`);
  }

  /** Writes a file at `input` (relative to the root), creating its folders; see WriteMode. */
  async writeFile(input: string, content: string | Uint8Array, mode: WriteMode, signal?: AbortSignal): Promise<WriteResult> {
    return writeInside(await this.realRoot(), this.#writable(input), input, content, mode, signal);
  }

  /** Creates the folder `input` and those above it; returns its absolute path. */
  async makeFolder(input: string): Promise<string> {
    return makeFolderInside(await this.realRoot(), this.#writable(input), input);
  }

  /** Removes the file `input` (a link itself, never its target). False when it was not there. */
  async removeFile(input: string): Promise<boolean> {
    return removeInside(await this.realRoot(), this.#writable(input), input);
  }

  /** `abs` relative to the root (or shown at its mount), with '/' separators, for display ("." for the root). */
  relative(abs: string): string {
    const bases: [string | undefined, string][] = [...this.readOnlyMounts.map((m): [string, string] => [m.dir, m.at]), [this.#realRoot, '.'], [this.root, '.']];
    for (const [base, at] of bases) {
      if (base === undefined || !isInside(base, abs)) continue;
      const rel = path.relative(base, abs).split(path.sep).join('/');
      return at === '.' ? rel || '.' : rel === '' ? at : `${at}/${rel}`;
    }
    return abs;
  }

  #mountOf(rel: string): ReadOnlyMount | undefined {
    return this.readOnlyMounts.find((m) => rel === m.at || rel.startsWith(`${m.at}/`));
  }

  /** The components of `input`, refused when it is a mount, inside one or a folder holding one. */
  #writable(input: string): string[] {
    const rel = normaliseRelative(input);
    const mount = this.#mountOf(rel);
    if (mount) throw new ToolError(`${input} is inside ${mount.at}, which is read-only; copy what you need elsewhere in the workspace`);
    // Writing the folder the mounts sit in (e.g. `skills`) would make a real one the mounts hide.
    const holder = this.readOnlyMounts.find((m) => m.at.startsWith(`${rel}/`));
    if (holder) throw new ToolError(`${input} holds read-only folders (${holder.at}); write elsewhere in the workspace`);
    return rel === '.' ? [] : rel.split('/');
  }
}

export interface ReadOnlyMount {
  /** Where it appears, relative to the root, e.g. `skills/pdf`. */
  readonly at: string;
  /** The absolute real path of the folder shown there. */
  readonly dir: string;
}

export interface WorkspaceOptions {
  readOnly?: readonly ReadOnlyMount[];
}

function checkMount(mount: ReadOnlyMount): ReadOnlyMount {
  const at = path.posix.normalize(mount.at);
  if (at !== mount.at || at === '.' || at === '..' || at.startsWith('../') || at.startsWith('/') || at.endsWith('/')) {
    throw new Error(`A read-only mount must be at a normalised relative path, got "${mount.at}"`);
  }
  if (!path.isAbsolute(mount.dir)) throw new Error(`A read-only mount's folder must be an absolute path, got "${mount.dir}"`);
  return { at, dir: path.resolve(mount.dir) };
}

/**
 * Walks `parts` component by component from the real folder `base`: a symlink anywhere must stay
 * inside, and the first missing component ends the walk (the rest is created later, lexically inside).
 */
async function resolveInside(base: string, parts: readonly string[], input: string, outside: string): Promise<string> {
  let current = base;
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
    if (!isInside(base, target)) throw new ToolError(outside);
    current = target;
  }
  return current;
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
