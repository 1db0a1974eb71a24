import type { Attachment, InboundMessage, OutboundAdapter } from '../../channels/types.js';
import { formatDecimalBytes } from '../../lib/text.js';
import { FileExistsError, type Workspace } from '../../tools/workspace.js';
import type { Logger } from '../../log.js';
import type { SavedAttachment } from '../../session/journal.js';

const UPLOADS = 'uploads';

function safeFileName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const cleaned = base
    .replace(/[\0-\x1f]/g, '')
    .replace(/^\.+/, '')
    .trim();
  return cleaned.slice(0, 120) || 'attachment';
}

/** Saves `bytes` under the first free uploads/<name>, uploads/<stem>-1<ext>, …; never over an existing file. */
async function saveUnderFreeName(ws: Workspace, name: string, bytes: Uint8Array): Promise<string> {
  const dot = name.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  for (let i = 0; ; i++) {
    const rel = `${UPLOADS}/${i === 0 ? name : `${stem}-${i}${ext}`}`;
    try {
      await ws.writeFile(rel, bytes, 'create');
      return rel;
    } catch (err) {
      if (!(err instanceof FileExistsError)) throw err;
    }
  }
}

/**
 * Downloads the attachments of a turn's messages into the session's workspace (uploads/), so
 * the model can read them with its tools. One that is too large or fails is named with the reason.
 */
export async function saveAttachments(
  out: OutboundAdapter,
  ws: Workspace,
  messages: readonly InboundMessage[],
  maxBytes: number,
  signal: AbortSignal,
  log: Logger,
): Promise<Map<Attachment, SavedAttachment>> {
  const saved = new Map<Attachment, SavedAttachment>();
  for (const attachment of messages.flatMap((m) => m.attachments)) {
    if (attachment.size !== undefined && attachment.size > maxBytes) {
      saved.set(attachment, { error: `larger than the ${formatDecimalBytes(maxBytes)} limit` });
      continue;
    }
    if (!out.download) {
      saved.set(attachment, { error: `the ${out.platform} channel cannot download files` });
      continue;
    }
    try {
      const bytes = await out.download(attachment, maxBytes, signal);
      saved.set(attachment, { path: await saveUnderFreeName(ws, safeFileName(attachment.name), bytes) });
    } catch (err) {
      log.warn({ err, attachment: attachment.name }, 'attachment not saved');
      saved.set(attachment, { error: err instanceof Error ? err.message : String(err) });
    }
  }
  return saved;
}
