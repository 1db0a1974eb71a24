import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { runSearch } from './search-worker.js';
import { fsError } from './fs-errors.js';
import { formatBytes } from '../lib/text.js';
import { ToolError, type Tool } from './types.js';
import { walk } from './walk.js';
import type { Workspace } from './workspace.js';

export const SEARCH_LIMITS = {
  maxMatches: 100,
  /** Matching lines are shown cut to this length. */
  maxLineChars: 200,
  /** Files searched at most … */
  maxFiles: 5000,
  /** … and directory entries walked at most (a name filter may match few of them). */
  maxEntries: 50_000,
  /** Larger files are skipped. */
  maxFileBytes: 1024 * 1024,
  /** Bytes read at most over the whole search. */
  maxTotalBytes: 50 * 1024 * 1024,
  /** Wall-clock cap; a runaway regex is stopped here. */
  timeoutMs: 10_000,
  maxDepth: 32,
};

const schema = z.object({
  pattern: z.string().min(1).describe('JavaScript regex, matched per line'),
  path: z.string().default('.').describe('Directory or file'),
  name: z.string().optional().describe('Only files whose name contains this, e.g. ".md"'),
  ignore_case: z.boolean().optional(),
});

export function createSearchFilesTool(ws: Workspace, limits: Partial<typeof SEARCH_LIMITS> = {}): Tool<typeof schema> {
  const lim = { ...SEARCH_LIMITS, ...limits };
  return {
    name: 'search_files',
    readOnly: true,
    description: `Search file contents by regex; returns "path:line: text", up to ${lim.maxMatches} matches. Skips binary files, .git, node_modules.`,
    schema,
    async execute({ pattern, path, name, ignore_case }, { signal }) {
      const flags = ignore_case ? 'i' : '';
      try {
        new RegExp(pattern, flags);
      } catch (err) {
        throw new ToolError(`pattern is not a valid JavaScript regex: ${(err as Error).message}`);
      }
      const abs = await ws.resolve(path);
      const display = ws.relative(abs);
      const info = await stat(abs).catch((err: unknown) => {
        throw fsError(err, display);
      });

      const files: { abs: string; rel: string }[] = [];
      let fileCapHit = false;
      let entryCapHit = false;
      let visited = 0;
      if (info.isFile()) {
        files.push({ abs, rel: display });
      } else {
        for await (const entry of walk(ws, abs, { maxDepth: lim.maxDepth, signal })) {
          if (++visited > lim.maxEntries) {
            entryCapHit = true;
            break;
          }
          if (entry.kind !== 'file' || (name !== undefined && !entry.rel.split('/').pop()!.includes(name))) continue;
          if (files.length >= lim.maxFiles) {
            fileCapHit = true;
            break;
          }
          files.push({ abs: entry.abs, rel: entry.rel });
        }
      }

      const outcome = await runSearch({ ...lim, files, source: pattern, flags }, lim.timeoutMs, signal);
      const lines = outcome.hits.length > 0 ? [...outcome.hits] : [`No matches for /${pattern}/${flags} in ${display} (${files.length} files).`];
      if (outcome.stop === 'matches') lines.push(`[Stopped at ${lim.maxMatches} matches; narrow the pattern or path.]`);
      if (outcome.stop === 'bytes') lines.push(`[Stopped after reading ${formatBytes(lim.maxTotalBytes)}; narrow the path.]`);
      if (outcome.stop === 'timeout') {
        lines.push(`[Stopped after ${lim.timeoutMs / 1000} s; results are partial. Simplify the pattern or narrow the path.]`);
      }
      if (fileCapHit) lines.push(`[Only the first ${lim.maxFiles} files were searched; narrow the path.]`);
      if (entryCapHit) lines.push(`[Stopped walking after ${lim.maxEntries} entries; narrow the path.]`);
      if (outcome.skipped > 0) {
        lines.push(`[Skipped ${outcome.skipped} unreadable or over-${formatBytes(lim.maxFileBytes)} files.]`);
      }
      return lines.join('\n');
    },
  };
}
