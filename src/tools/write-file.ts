import { z } from 'zod';
import { fsError } from './fs-errors.js';
import { formatBytes } from '../lib/text.js';
import { ToolError, type Tool } from './types.js';
import type { Workspace } from './workspace.js';

export const WRITE_LIMITS = {
  maxBytes: 1024 * 1024,
};

const schema = z.object({
  path: z.string().describe('File path'),
  content: z.string().describe('Full file content'),
});

export function createWriteFileTool(ws: Workspace, limits: Partial<typeof WRITE_LIMITS> = {}): Tool<typeof schema> {
  const { maxBytes } = { ...WRITE_LIMITS, ...limits };
  return {
    name: 'write_file',
    description: 'Create or overwrite a file (parent directories are created).',
    schema,
    async execute({ path: input, content }, { signal }) {
      const bytes = Buffer.byteLength(content);
      if (bytes > maxBytes) {
        throw new ToolError(`content is ${formatBytes(bytes)}; write_file accepts at most ${formatBytes(maxBytes)}`);
      }
      // Resolved first for its refusals (outside, through a link leading out) and the display name.
      const display = ws.relative(await ws.resolve(input));
      signal.throwIfAborted();
      const { existed } = await ws.writeFile(input, content, 'replace', signal).catch((err: unknown) => {
        throw fsError(err, display);
      });
      return `${existed ? 'Overwrote' : 'Created'} ${display} (${bytes} bytes written)`;
    },
  };
}
