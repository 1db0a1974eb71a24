import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { fsError } from './fs-errors.js';
import { ToolError, type Tool } from './types.js';
import { SKIP_DIRS, walk } from './walk.js';
import type { Workspace } from './workspace.js';

export const LIST_LIMITS = {
  /** Entries shown. */
  maxEntries: 500,
  /** Entries counted at most (for the "N more" note) before the walk stops. */
  maxScanned: 10_000,
  /** Directory levels a recursive listing enters. */
  maxDepth: 6,
};

const schema = z.object({
  path: z.string().default('.').describe('Directory'),
  recursive: z.boolean().optional().describe('Include subdirectories'),
});

export function createListFilesTool(ws: Workspace, limits: Partial<typeof LIST_LIMITS> = {}): Tool<typeof schema> {
  const { maxEntries, maxScanned, maxDepth } = { ...LIST_LIMITS, ...limits };
  return {
    name: 'list_files',
    readOnly: true,
    description: `List a directory, sorted; directories end with "/", symlinks with "@". Skips ${[...SKIP_DIRS].join(', ')} contents.`,
    schema,
    async execute({ path, recursive }, { signal }) {
      const abs = await ws.resolve(path);
      const display = ws.relative(abs);
      const info = await stat(abs).catch((err: unknown) => {
        throw fsError(err, display);
      });
      if (!info.isDirectory()) throw new ToolError(`${display} is not a directory; use read_file`);

      const depthLimit = recursive ? maxDepth : 1;
      const shown: string[] = [];
      let total = 0;
      let unexpanded = false;
      for await (const entry of walk(ws, abs, { maxDepth: depthLimit, signal })) {
        if (++total > maxScanned) break;
        if (entry.kind === 'dir' && recursive && entry.depth === depthLimit) unexpanded = true;
        if (shown.length < maxEntries) {
          shown.push(entry.rel + (entry.kind === 'dir' ? '/' : entry.kind === 'symlink' ? '@' : ''));
        }
      }
      if (total === 0) return `(${display} is empty)`;
      const lines = shown;
      if (total > maxScanned) lines.push(`… more than ${maxScanned - shown.length} more entries not shown`);
      else if (total > shown.length) lines.push(`… ${total - shown.length} more entries not shown`);
      if (unexpanded) lines.push(`(directories ${maxDepth} levels down are not expanded; list them separately)`);
      return lines.join('\n');
    },
  };
}
