import type { InboundMessage, OutgoingFile } from '../types.js';
import { fitStatus } from './format.js';
import { interactionOf, uploadNonce, type InteractionRef } from './ids.js';
import type { UploadPart } from './rest.js';
import { NO_PINGS, quietReply, type DiscordWriter, type Posted } from './writer.js';

/** A deferred response that still shows "is thinking…". */
const LOADING = 1 << 7;
/** Megabytes over a slow link take longer than the client's JSON timeout. */
const UPLOAD_TIMEOUT_MS = 120_000;

/**
 * A workspace file as a message of its own: the attachment, with the caption as its text,
 * pinging no one. A slash command gets it as a follow-up of its interaction while the token is
 * valid, else (like its answer) in the channel; a mention or DM as a reply to the user's message.
 */
export async function uploadFile(w: DiscordWriter, to: InboundMessage, file: OutgoingFile, signal: AbortSignal): Promise<string> {
  const part: UploadPart = { name: file.name, data: await file.read(), contentType: file.mime };
  const ref = interactionOf(to);
  if (ref && w.usable(ref)) {
    const posted = await uploadToInteraction(w, to.conversation, ref, file, part, signal);
    if (posted) return posted;
  }
  return uploadToChannel(w, to, file, part, signal);
}

/** Null when the interaction no longer takes messages: the caller uploads to the channel. */
async function uploadToInteraction(
  w: DiscordWriter,
  channel: string,
  ref: InteractionRef,
  file: OutgoingFile,
  part: UploadPart,
  signal: AbortSignal,
): Promise<string | null> {
  if (!(await w.hook(ref, () => settleDeferred(w, channel, ref, file, signal)))) return null;
  // Not idempotent, like any follow-up: one whose response was lost is not sent again (only a 429 is retried).
  const posted = await w.hook(ref, () =>
    w.write<Posted>(channel, 'POST', `/webhooks/${ref.applicationId}/${ref.token}`, {
      auth: false,
      body: { ...fileMessage(file), ...w.created('answer') },
      files: [part],
      timeoutMs: UPLOAD_TIMEOUT_MS,
      signal,
    }),
  );
  return posted?.id ?? null;
}

/**
 * While the deferred response still shows "is thinking…", Discord makes a follow-up that very
 * response instead of a new message (documented, deprecated): the file would then sit under the
 * progress lines and the answer that overwrite its caption. A progress line settles it first.
 */
async function settleDeferred(w: DiscordWriter, channel: string, ref: InteractionRef, file: OutgoingFile, signal: AbortSignal): Promise<true> {
  const original = await w.call<{ flags?: number }>('GET', `/webhooks/${ref.applicationId}/${ref.token}/messages/@original`, { auth: false, signal });
  if ((original.flags ?? 0) & LOADING) await w.editOriginal(channel, ref, fitStatus(`• sending ${file.name}`), 'status');
  return true;
}

/** With enforce_nonce a resent upload (a lost response, a 5xx) returns the message already made. */
async function uploadToChannel(w: DiscordWriter, to: InboundMessage, file: OutgoingFile, part: UploadPart, signal: AbortSignal): Promise<string> {
  const body = { ...fileMessage(file), nonce: uploadNonce(), enforce_nonce: true, ...quietReply(to), ...w.created('answer') };
  const posted = await w.write<Posted>(to.conversation, 'POST', `/channels/${to.conversation}/messages`, {
    body,
    files: [part],
    idempotent: true,
    timeoutMs: UPLOAD_TIMEOUT_MS,
    signal,
  });
  return posted.id;
}

/** The payload_json of a message carrying one file (`files[0]`) and its caption. */
function fileMessage(file: OutgoingFile): Record<string, unknown> {
  return { ...(file.caption !== undefined && { content: file.caption }), attachments: [{ id: 0, filename: file.name }], allowed_mentions: NO_PINGS };
}
