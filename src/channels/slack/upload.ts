import type { FetchFunction, FilesUploadV2Arguments, Logger as SlackLogger, WebAPICallResult } from '@slack/web-api';
import type { InboundMessage, OutgoingFile } from '../types.js';
import { createWebClient, REQUEST_TIMEOUT_MS } from './api.js';
import type { SlackWriter } from './writer.js';
import { mayReceiveToken } from './download.js';
import { escapePlain } from './format.js';
import { anySignal } from '../../lib/abort.js';

/**
 * The largest file Slack takes: 1 GB, checked against files.getUploadURLExternal's `length`.
 * Counted in decimal bytes, so a file we let through is under Slack's limit whichever "GB" it means.
 */
export const SLACK_UPLOAD_MAX_BYTES = 1_000_000_000;

/** A byte upload slower than this (1 MB/s) counts as stalled. */
const UPLOAD_MIN_BYTES_PER_MS = 1_000;

/** How long the POST of `size` bytes to the upload URL may take: the usual request timeout, plus the time at the slowest acceptable rate. */
export function uploadTimeoutMs(size: number): number {
  return REQUEST_TIMEOUT_MS + Math.ceil(size / UPLOAD_MIN_BYTES_PER_MS);
}

/**
 * The transport of one files.uploadV2 (three requests): the Web API calls keep the usual
 * timeout, the bytes get one sized to the file, and all of them stop when the tool call is
 * aborted (uploadV2 takes no signal of its own). The WebClient sends the bot token with the bytes
 * as well, so an upload URL that is neither Slack's nor on the Web API's origin is refused before
 * anything is sent.
 */
export function uploadTransport(apiBase: string, size: number, signal: AbortSignal): FetchFunction {
  return (url, init) => {
    const target = new URL(url);
    const isApiCall = target.href.startsWith(apiBase);
    if (!isApiCall && !mayReceiveToken(target, apiBase)) {
      return Promise.reject(new Error(`Slack gave an upload URL on ${target.host}; the bot token is not sent there`));
    }
    const timeout = AbortSignal.timeout(isApiCall ? REQUEST_TIMEOUT_MS : uploadTimeoutMs(size));
    const linked = anySignal(init?.signal ? [signal, timeout, init.signal] : [signal, timeout]);
    return fetch(target, { ...init, signal: linked.signal }).finally(linked.dispose);
  };
}

/**
 * files.uploadV2's arguments for `file`, placed like an answer (postOne): in the thread of the
 * message it answers; at the top level of a DM the user did not thread. The caption is plain
 * text, so Slack's control characters in it are escaped.
 */
export function uploadArguments(to: InboundMessage, file: OutgoingFile, bytes: Uint8Array): FilesUploadV2Arguments {
  const common = {
    // The file's own memory, not a copy: it may be up to a gigabyte.
    file: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    filename: file.name,
    title: file.name,
    ...(file.caption !== undefined && { initial_comment: escapePlain(file.caption) }),
  };
  return to.thread !== undefined ? { ...common, channel_id: to.conversation, thread_ts: to.thread } : { ...common, channel_id: to.conversation };
}

/** The id of the file files.uploadV2 shared (its answer holds each completeUploadExternal answer). */
export function uploadedFileId(result: WebAPICallResult): string | undefined {
  const completions = (result as { files?: { files?: { id?: string }[] }[] }).files;
  return completions?.[0]?.files?.[0]?.id;
}

/** What an upload needs beyond the writer: a client of its own per upload (its transport carries the call's signal and timeout). */
export interface UploadClient {
  token: string;
  apiUrl: string | undefined;
  base: string;
  sdkLog: SlackLogger;
}

/**
 * Shares a workspace file where the answer goes (files.uploadV2: get an upload URL, POST the
 * bytes, complete the upload into the channel / thread). Each attempt uploads under a new file
 * id and only a completed one is shared, so the whole upload is repeated after a 429 (nothing
 * was shared); any other failure is thrown for classifyWriteError: a lost answer, above all
 * from completeUploadExternal, is an unknown outcome and is never repeated.
 */
export async function uploadFile(w: SlackWriter, via: UploadClient, to: InboundMessage, file: OutgoingFile, signal: AbortSignal): Promise<string> {
  const bytes = await file.read();
  const client = createWebClient(via.token, via.apiUrl, via.sdkLog, { fetch: uploadTransport(via.base, bytes.byteLength, signal) });
  const args = uploadArguments(to, file, bytes);
  const res = await w.write(to.conversation, 'files.uploadV2', () => client.files.uploadV2(args), { idempotent: false, signal });
  const id = uploadedFileId(res) ?? '';
  w.log.info({ channel: to.conversation, thread: to.thread, file: file.name, bytes: bytes.byteLength, id }, 'file uploaded');
  return id;
}
