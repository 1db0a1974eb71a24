import { z } from 'zod';
import { fsError, readTextFile } from './fs-errors.js';
import { formatBytes } from '../lib/text.js';
import { splitLines } from './text.js';
import { ToolError, type Tool } from './types.js';
import type { Workspace } from './workspace.js';

export const EDIT_LIMITS = {
  maxFileBytes: 5 * 1024 * 1024,
};

const schema = z.object({
  path: z.string().describe('File path'),
  old_text: z.string().min(1).describe('Exact text to replace; must occur once'),
  new_text: z.string().describe('Replacement'),
});

export function createEditFileTool(ws: Workspace, limits: Partial<typeof EDIT_LIMITS> = {}): Tool<typeof schema> {
  const { maxFileBytes } = { ...EDIT_LIMITS, ...limits };
  return {
    name: 'edit_file',
    description: 'Replace one exact, unique snippet in a file.',
    schema,
    async execute({ path, old_text, new_text }, { signal }) {
      const abs = await ws.resolve(path);
      const display = ws.relative(abs);
      const text = await readTextFile(abs, display, maxFileBytes, signal);
      if (old_text === new_text) throw new ToolError('old_text and new_text are identical; nothing to change');

      let oldText = old_text;
      let newText = new_text;
      let at = findUnique(text, oldText, display);
      // Models write "\n"; let a snippet match a CRLF file too.
      if (at === -1 && text.includes('\r\n') && !oldText.includes('\r')) {
        oldText = oldText.replaceAll('\n', '\r\n');
        newText = newText.replaceAll('\r\n', '\n').replaceAll('\n', '\r\n');
        at = findUnique(text, oldText, display);
      }
      if (at === -1) throw new ToolError(`old_text not found in ${display}`);

      // Slicing, not String.replace: "$&" and friends in new_text must stay literal.
      const updated = text.slice(0, at) + newText + text.slice(at + oldText.length);
      const bytes = Buffer.byteLength(updated);
      if (bytes > maxFileBytes) throw new ToolError(`the edit would make ${display} ${formatBytes(bytes)}, over the limit`);
      signal.throwIfAborted();
      await ws.writeFile(path, updated, 'replace', signal).catch((err: unknown) => {
        throw fsError(err, display);
      });
      const line = countLines(text.slice(0, at));
      const delta = bytes - Buffer.byteLength(text);
      return `Edited ${display} at line ${line}: ${snippetLines(oldText)} line(s) replaced by ${snippetLines(newText)} (${delta >= 0 ? '+' : ''}${delta} bytes)`;
    },
  };
}

/** Index of the only occurrence of `needle`, -1 if absent; a ToolError if it occurs more than once. */
function findUnique(haystack: string, needle: string, display: string): number {
  const first = haystack.indexOf(needle);
  if (first === -1) return -1;
  let count = 1;
  for (let i = haystack.indexOf(needle, first + 1); i !== -1; i = haystack.indexOf(needle, i + 1)) count++;
  if (count > 1) throw new ToolError(`old_text occurs ${count} times in ${display}; include more context to make it unique`);
  return first;
}

function countLines(s: string): number {
  let n = 1;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

function snippetLines(s: string): number {
  return s === '' ? 0 : splitLines(s).length;
}
