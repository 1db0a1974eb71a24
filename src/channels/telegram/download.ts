import { open } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import type { Api } from 'grammy';
import { GrammyError } from 'grammy';
import { grammySignal, withTelegramRetries } from './errors.js';
import { readCapped } from '../kit/read-capped.js';
import { formatDecimalBytes } from '../../lib/text.js';

/** Telegram's cloud Bot API hands out files up to 20 MB (getFile); a local Bot API server has no such cap. */
export const CLOUD_DOWNLOAD_LIMIT = 20_000_000;

export class FileTooLargeError extends Error {
  override readonly name = 'FileTooLargeError';
  constructor(readonly limit: number) {
    super(`larger than the ${formatDecimalBytes(limit)} limit`);
  }
}

/**
 * Fetches a file by file_id: getFile for its path, then the bytes from `<apiRoot>/file/bot<token>/<path>`,
 * read as a stream and abandoned as soon as it passes `maxBytes`. A local Bot API server started
 * with --local answers with an absolute path on its own disk instead; that is read directly (the
 * gateway and the worker must then share that volume). Errors never carry the URL (it holds the token).
 */
export async function downloadFile(api: Api, apiRoot: string, token: string, fileId: string, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
  let file;
  try {
    file = await withTelegramRetries(() => api.getFile(fileId, grammySignal(signal)), { idempotent: true, signal, maxWaitMs: 60_000 });
  } catch (err) {
    if (err instanceof GrammyError && /file is too big/i.test(err.description)) throw new FileTooLargeError(Math.min(maxBytes, CLOUD_DOWNLOAD_LIMIT));
    throw err;
  }
  if (file.file_size !== undefined && file.file_size > maxBytes) throw new FileTooLargeError(maxBytes);
  if (!file.file_path) throw new Error('Telegram gave no download path for this file');
  if (isAbsolute(file.file_path)) return readLocal(file.file_path, maxBytes);

  const url = `${apiRoot}/file/bot${token}/${file.file_path.split('/').map(encodeURIComponent).join('/')}`;
  let res: Response;
  try {
    res = await fetch(url, { signal });
  } catch (err) {
    if (signal.aborted) throw new Error('download cancelled');
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    throw new Error(`download failed${cause ? ` (${cause})` : ''}`);
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`download failed: HTTP ${res.status}`);
  }
  return readCapped(res, maxBytes, () => new FileTooLargeError(maxBytes));
}

async function readLocal(path: string, maxBytes: number): Promise<Uint8Array> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    if (size > maxBytes) throw new FileTooLargeError(maxBytes);
    const buffer = new Uint8Array(size);
    await handle.read(buffer, 0, size, 0);
    return buffer;
  } finally {
    await handle.close();
  }
}
