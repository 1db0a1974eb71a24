import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Workspace } from '../../src/tools/workspace.js';

/** A temp dir holding a workspace root `ws/` and a sibling `outside/` with a sentinel file. */
export interface Sandbox {
  base: string;
  root: string;
  outside: string;
  sentinel: string;
  ws: Workspace;
  signal: AbortSignal;
  write(rel: string, content: string | Uint8Array): Promise<void>;
  read(rel: string): Promise<string>;
  /** Every path under `outside/` with its content, to compare before and after. */
  outsideSnapshot(): Promise<Record<string, string>>;
  cleanup(): Promise<void>;
}

export const SENTINEL_TEXT = 'outside sentinel, must not change\n';

export async function makeSandbox(): Promise<Sandbox> {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'switchboard-tools-')));
  const root = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await fs.mkdir(root);
  await fs.mkdir(outside);
  const sentinel = path.join(outside, 'secret.txt');
  await fs.writeFile(sentinel, SENTINEL_TEXT);
  return {
    base,
    root,
    outside,
    sentinel,
    ws: new Workspace(root),
    signal: new AbortController().signal,
    async write(rel, content) {
      const abs = path.join(root, rel);
      await fs.mkdir(path.dirname(abs), { recursive: true });
      await fs.writeFile(abs, content);
    },
    read: (rel) => fs.readFile(path.join(root, rel), 'utf8'),
    async outsideSnapshot() {
      const out: Record<string, string> = {};
      for (const entry of await fs.readdir(outside, { recursive: true, withFileTypes: true })) {
        const abs = path.join(entry.parentPath, entry.name);
        out[path.relative(outside, abs)] = entry.isFile() ? await fs.readFile(abs, 'utf8') : '<dir>';
      }
      return out;
    },
    cleanup: () => fs.rm(base, { recursive: true, force: true }),
  };
}
