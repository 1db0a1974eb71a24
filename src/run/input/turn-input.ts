import type { ChatMessage } from '../../agent/types.js';
import type { Attachment, InboundMessage, OutboundAdapter } from '../../channels/types.js';
import type { SavedAttachment, TurnJournal } from '../../session/journal.js';
import type { Workspace } from '../../tools/workspace.js';
import type { RunContext } from '../context.js';
import { saveAttachments } from './attachments.js';
import { imagesOf } from './images.js';
import { fitMessages } from './long-message.js';
import { toUserMessage } from './user-message.js';

/**
 * The user messages the model reads for the turn's messages: attachments saved in the workspace
 * (once per turn: a resumed run reads where they went from the journal), images shown under
 * MODEL_VISION, a long text saved whole with its beginning shown.
 */
export async function turnInput(
  ctx: RunContext,
  journal: TurnJournal,
  workspace: Workspace,
  out: OutboundAdapter,
  messages: InboundMessage[],
  signal: AbortSignal,
): Promise<ChatMessage[]> {
  const { input } = ctx.deps;
  const saved = await attachmentsOf(ctx, journal, workspace, out, messages, signal);
  const images = input.vision ? await imagesOf(workspace, saved, input.vision.imageMaxBytes, ctx.log) : undefined;
  const shown = await fitMessages(workspace, messages, input.messageMaxChars, ctx.log);
  return shown.map((m) => toUserMessage(m, saved, images));
}

/** The turn's attachments in its workspace: as an earlier run of the turn saved them, else downloaded now. */
async function attachmentsOf(
  ctx: RunContext,
  journal: TurnJournal,
  workspace: Workspace,
  out: OutboundAdapter,
  messages: InboundMessage[],
  signal: AbortSignal,
): Promise<Map<Attachment, SavedAttachment>> {
  const attachments = messages.flatMap((m) => m.attachments);
  const recorded = journal.attachments;
  if (recorded && recorded.length === attachments.length) return new Map(attachments.map((a, i) => [a, recorded[i]!]));
  const saved = await saveAttachments(out, workspace, messages, ctx.deps.input.attachmentMaxBytes, signal, ctx.log);
  if (attachments.length > 0) journal.record({ t: 'attachments', saved: attachments.map((a) => saved.get(a)!) });
  return saved;
}
