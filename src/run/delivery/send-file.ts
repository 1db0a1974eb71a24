import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { lookup } from 'mime-types';
import { z } from 'zod';
import { CAPTION_MAX_CHARS, type InboundMessage, type OutboundAdapter, type OutgoingFile } from '../../channels/types.js';
import { fsError } from '../../tools/fs-errors.js';
import { formatBytes } from '../../lib/text.js';
import { ToolError, type Tool } from '../../tools/types.js';
import type { Workspace } from '../../tools/workspace.js';

const schema = z.object({
  path: z.string().describe('Workspace path of the file to send'),
  caption: z.string().max(CAPTION_MAX_CHARS).optional().describe('A short line shown with the file'),
});

const PLATFORM_NAMES: Record<string, string> = { slack: 'Slack', telegram: 'Telegram', discord: 'Discord', terminal: 'the terminal' };

/**
 * send_file: a workspace file goes into the conversation the turn answers, as the platform's own
 * attachment. Absent when the platform cannot upload. It is side-effecting (not `readOnly`), so
 * the journal's write-ahead holds: a run that resumes after a crash mid-upload tells the model the
 * call was interrupted instead of uploading again. Every failure is a result the model reads and
 * can pass on: a file over the platform's limit, a refusal, an upload whose outcome is unknown.
 */
export function createSendFileTool(ws: Workspace, out: OutboundAdapter, to: InboundMessage): Tool<typeof schema> | undefined {
  const { upload } = out;
  const maxBytes = out.uploadMaxBytes;
  if (!upload || maxBytes === undefined) return undefined;
  const platform = PLATFORM_NAMES[out.platform] ?? out.platform;
  return {
    name: 'send_file',
    description:
      `Send a file from the workspace into this conversation as an attachment (${platform} takes up to ${formatBytes(maxBytes)}). ` +
      'Use it when the person should get the file itself (a report, an image, an export). Each call sends it once.',
    schema,
    async execute({ path: input, caption }, { signal }) {
      const abs = await ws.resolve(input);
      const display = ws.relative(abs);
      const info = await stat(abs).catch((err: unknown) => {
        throw fsError(err, display);
      });
      if (info.isDirectory()) throw new ToolError(`${display} is a directory; send one file (e.g. an archive of it made with run_command)`);
      if (!info.isFile()) throw new ToolError(`${display} is not a regular file`);
      if (info.size === 0) throw new ToolError(`${display} is empty; there is nothing to send`);
      if (info.size > maxBytes) {
        throw new ToolError(
          `${display} is ${formatBytes(info.size)}; ${platform} takes files up to ${formatBytes(maxBytes)}. Make it smaller (compress or split it), or tell the person where it is in the workspace.`,
        );
      }
      const name = path.basename(abs);
      const file: OutgoingFile = {
        name,
        path: display,
        absolutePath: abs,
        size: info.size,
        mime: lookup(name) || 'application/octet-stream',
        ...(caption !== undefined && caption.trim() !== '' && { caption: caption.trim() }),
        read: async () => {
          const bytes = await readFile(abs, { signal });
          // It may have grown since the check above (a command still writing it).
          if (bytes.length > maxBytes)
            throw new ToolError(`${display} grew to ${formatBytes(bytes.length)}, over ${platform}'s ${formatBytes(maxBytes)}; not sent`);
          return bytes;
        },
      };
      signal.throwIfAborted();
      try {
        await upload.call(out, to, file, signal);
      } catch (err) {
        if (err instanceof ToolError || signal.aborted) throw err;
        throw new ToolError(failureMessage(out.classifyWriteError(err), platform, display, err));
      }
      return `Sent ${display} (${formatBytes(info.size)}) into the conversation`;
    },
  };
}

function failureMessage(how: ReturnType<OutboundAdapter['classifyWriteError']>, platform: string, display: string, err: unknown): string {
  const detail = err instanceof Error ? err.message : String(err);
  if (how === 'refused') return `${platform} refused ${display}: ${detail}`;
  if (how === 'unknown')
    return `the upload of ${display} may or may not have arrived (${detail}); it was not sent again. Ask the person before sending it again.`;
  return `${display} was not sent (${detail}); you may try once more`;
}
