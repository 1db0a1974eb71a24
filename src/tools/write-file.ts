import { mkdir, stat } from 'node:fs/promises';
import { writeFileAtomic } from './atomic-write.js';
import path from 'node:path';
import { z } from 'zod';
import { fsError } from './fs-errors.js';
import { formatBytes } from './text.js';
import { ToolError, type Tool } from './types.js';
import { errnoCode, type Workspace } from './workspace.js';

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
      const abs = await ws.resolve(input);
      const display = ws.relative(abs);
      const existed = await stat(abs).then(
        (info) => {
          if (info.isDirectory()) throw new ToolError(`${display} is a directory`);
          return true;
        },
        (err: unknown) => {
          if (errnoCode(err) === 'ENOENT') return false;
          throw fsError(err, display);
        },
      );
      signal.throwIfAborted();
      try {
        await mkdir(path.dirname(abs), { recursive: true });
        await writeFileAtomic(abs, content, signal);
      } catch (err) {
        throw fsError(err, display);
      }
      return `${existed ? 'Overwrote' : 'Created'} ${display} (${bytes} bytes written)`;
    },
  };
}
