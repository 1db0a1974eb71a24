import { randomBytes } from 'node:crypto';
import { chmod, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Replaces a file's content all at once: written beside it under a temporary name, then renamed
 * over it. A plain writeFile truncates first, so a worker killed mid-write, or a call aborted
 * between chunks (a run that lost its lock, a tool timeout), left the file empty or cut — and
 * the resumed turn then edits a file that lost what it had. Here the file is the old one or the
 * new one, never a part. An existing file keeps its permission bits.
 */
export async function writeFileAtomic(file: string, content: string, signal?: AbortSignal): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const mode = await stat(file).then(
    (s) => s.mode & 0o7777,
    () => undefined,
  );
  try {
    await writeFile(temp, content, { ...(signal && { signal }), flag: 'wx' });
    if (mode !== undefined) await chmod(temp, mode);
    signal?.throwIfAborted();
    await rename(temp, file);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
}
