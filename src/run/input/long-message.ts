import { createHash } from 'node:crypto';
import type { InboundMessage } from '../../channels/types.js';
import { cutAt } from '../../lib/text.js';
import type { Logger } from '../../log.js';
import { ToolError } from '../../tools/types.js';
import type { Workspace } from '../../tools/workspace.js';

/** Where a long message's full text went: its workspace path, or why it is not there. */
export type SavedText = { path: string } | { error: string };

/** The same message always gets the same file, so a resumed turn finds what an earlier run wrote. */
export function longMessagePath(message: InboundMessage): string {
  return `uploads/message-${createHash('sha256').update(message.id).digest('hex').slice(0, 12)}.txt`;
}

/** The line after the beginning of a long message: how long it was and where the rest is. */
export function longMessageNote(length: number, shown: number, saved: SavedText): string {
  const head = `[This message was ${length.toLocaleString('en-US')} characters long, too long to include in full: above are its first ${shown.toLocaleString('en-US')} characters.`;
  if ('path' in saved) return `${head} It is saved in full at ${saved.path}; read it with read_file (offset/limit) or search_files.]`;
  return `${head} Saving the rest failed (${saved.error}), so it is not available; ask the user for the part you need.]`;
}

/**
 * The messages as the model reads them: one longer than `maxChars` becomes its beginning and a
 * note, its full text saved in the workspace (the inbox keeps it too). Failing to save loses
 * nothing the inbox does not still hold: the note says the rest is missing.
 */
export async function fitMessages(ws: Workspace, messages: readonly InboundMessage[], maxChars: number, log: Logger): Promise<InboundMessage[]> {
  return Promise.all(
    messages.map(async (m) => {
      if (m.text.length <= maxChars) return m;
      const saved = await saveText(ws, longMessagePath(m), m.text);
      if ('path' in saved) log.info({ message: m.id, chars: m.text.length, path: saved.path }, 'long message saved in the workspace');
      else log.warn({ message: m.id, chars: m.text.length, error: saved.error }, 'long message not saved; the model reads its beginning only');
      const shown = cutAt(m.text, maxChars);
      return { ...m, text: `${shown}\n\n${longMessageNote(m.text.length, shown.length, saved)}` };
    }),
  );
}

/**
 * Written once (the workspace's `once` mode: a temp file linked into place, which keeps a file
 * already there), so a crash mid-write never leaves a cut file under the real name, and a
 * resumed turn keeps the file an earlier run saved (and whatever the model did to it since).
 */
async function saveText(ws: Workspace, rel: string, text: string): Promise<SavedText> {
  try {
    await ws.writeFile(rel, text, 'once');
    return { path: rel };
  } catch (err) {
    // A refusal says what is wrong in workspace terms; for anything else the code, not the message:
    // the message names host paths the model has no business seeing.
    if (err instanceof ToolError) return { error: err.message };
    return { error: (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err)) };
  }
}
