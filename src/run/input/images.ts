import { open, readFile } from 'node:fs/promises';
import type { Attachment } from '../../channels/types.js';
import { formatDecimalBytes } from '../../lib/text.js';
import type { Logger } from '../../log.js';
import type { Workspace } from '../../tools/workspace.js';
import type { SavedAttachment } from '../../session/journal.js';

/** What the model is shown of an image attachment: the picture itself, or why not. */
export type ShownImage = { dataUrl: string } | { notShown: string };

/** The formats vision models take as image parts. */
export type ImageType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/**
 * The image type from the file's first bytes, not its name: a data URL whose type does not match
 * its content is refused by the model APIs, and a `.png` from a chat is often a JPEG.
 */
export function sniffImage(head: Uint8Array): ImageType | undefined {
  const ascii = (from: number, to: number) => String.fromCharCode(...head.subarray(from, to));
  if (head.length >= 8 && head[0] === 0x89 && ascii(1, 4) === 'PNG') return 'image/png';
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  if (head.length >= 6 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return 'image/gif';
  if (head.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

/**
 * The image attachments of a turn as the model will see them (MODEL_VISION): each saved file
 * that is a png, jpeg, gif or webp, as a data URL when it is at most `maxBytes`. Other files are
 * not in the map (they stay a path, as without vision). A file that cannot be read is named, never fatal.
 */
export async function imagesOf(
  workspace: Workspace,
  saved: ReadonlyMap<Attachment, SavedAttachment>,
  maxBytes: number,
  log: Logger,
): Promise<Map<Attachment, ShownImage>> {
  const shown = new Map<Attachment, ShownImage>();
  for (const [attachment, where] of saved) {
    if (!('path' in where)) continue;
    try {
      const abs = await workspace.resolve(where.path);
      const { type, size } = await probe(abs);
      if (!type) continue;
      if (size > maxBytes) {
        shown.set(attachment, { notShown: `an image over the ${formatDecimalBytes(maxBytes)} limit for pictures (IMAGE_MAX_BYTES)` });
        continue;
      }
      const bytes = await readFile(abs);
      shown.set(attachment, { dataUrl: `data:${type};base64,${bytes.toString('base64')}` });
    } catch (err) {
      log.warn({ err, attachment: attachment.name }, 'image attachment not shown to the model');
      shown.set(attachment, { notShown: 'an image that could not be read' });
    }
  }
  return shown;
}

async function probe(abs: string): Promise<{ type: ImageType | undefined; size: number }> {
  const file = await open(abs, 'r');
  try {
    const head = new Uint8Array(16);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    return { type: sniffImage(head.subarray(0, bytesRead)), size: (await file.stat()).size };
  } finally {
    await file.close();
  }
}
