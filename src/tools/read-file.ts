import { z } from 'zod';
import { readTextFile } from './fs-errors.js';
import { formatBytes } from '../lib/text.js';
import { splitLines } from './text.js';
import { ToolError, type Tool } from './types.js';
import type { Workspace } from './workspace.js';

export const READ_LIMITS = {
  /** Larger files are refused outright. */
  maxFileBytes: 5 * 1024 * 1024,
  /** One call returns at most this much text … */
  maxOutputBytes: 50 * 1024,
  /** … and at most this many lines. */
  maxLines: 2000,
  /** Longer lines (minified files) are cut, so one line never fills the output. */
  maxLineChars: 4000,
};

const schema = z.object({
  path: z.string().describe('File path'),
  offset: z.int().min(1).optional().describe('First line, 1-based'),
  limit: z.int().min(1).optional().describe('Max lines'),
});

export function createReadFileTool(ws: Workspace, limits: Partial<typeof READ_LIMITS> = {}): Tool<typeof schema> {
  const { maxFileBytes, maxOutputBytes, maxLines, maxLineChars } = { ...READ_LIMITS, ...limits };
  return {
    name: 'read_file',
    readOnly: true,
    description: `Read a text file. Output is cut at ${maxLines} lines or ${formatBytes(maxOutputBytes)}; use offset/limit for more.`,
    schema,
    async execute({ path, offset = 1, limit }, { signal }) {
      const abs = await ws.resolve(path);
      const display = ws.relative(abs);
      const text = await readTextFile(abs, display, maxFileBytes, signal);
      if (text === '') return `(${display} is empty)`;
      const lines = splitLines(text);
      if (offset > lines.length) {
        throw new ToolError(`offset ${offset} is past the end of ${display} (${lines.length} lines)`);
      }
      const end = Math.min(lines.length, offset - 1 + Math.min(limit ?? maxLines, maxLines));
      const out: string[] = [];
      let bytes = 0;
      let next = offset - 1;
      let cutBySize = false;
      for (; next < end; next++) {
        let line = lines[next]!;
        if (line.length > maxLineChars) {
          line = `${line.slice(0, maxLineChars)} … [line cut: ${line.length} chars]`;
        }
        const size = Buffer.byteLength(line) + 1;
        if (bytes + size > maxOutputBytes && out.length > 0) {
          cutBySize = true;
          break;
        }
        out.push(line);
        bytes += size;
      }
      let body = out.join('\n');
      if (next < lines.length) {
        const why = cutBySize ? ` (output cut at ${formatBytes(maxOutputBytes)})` : '';
        body += `\n\n[Showing lines ${offset}-${next} of ${lines.length}${why}. Use offset=${next + 1} to read more.]`;
      }
      return body;
    },
  };
}
