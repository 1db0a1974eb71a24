import { DelayedError } from 'bullmq';
import { bindingOf, sameCall } from '../agent/approval-binding.js';
import type { ApprovalRequest } from '../agent/types.js';
import type { InboundMessage, OutboundAdapter } from '../channels/types.js';
import { cardOf } from '../channels/kit/approval-card.js';
import type { JournalEntry, TurnJournal } from '../session/journal.js';
import type { RunContext } from './context.js';

type Open = Extract<JournalEntry, { t: 'approval_open' }>;

/**
 * A tool call needs a person's decision: the approval is opened and written to the journal, its
 * card posted where the request came from, and the job parked (delayed until the expiry), so the
 * run holds no worker slot while it waits. A click wakes the job; the next run resumes the turn
 * from the journal. On a platform that cannot show buttons the call is denied at once, and the
 * caller runs the turn on.
 */
export async function requestApproval(
  ctx: RunContext,
  journal: TurnJournal,
  out: OutboundAdapter,
  to: InboundMessage,
  request: ApprovalRequest,
): Promise<void> {
  const { deps, log } = ctx;
  await journal.writeBuffer();
  const binding = bindingOf(request);
  const record = await deps.tools.approvals.open({
    session: ctx.session,
    jobId: ctx.jobId,
    ...binding,
    args: request.args,
    platform: to.platform,
    conversation: to.conversation,
    requester: to.sender.id,
    requesterName: to.sender.name ?? to.sender.id,
    expiresAt: Date.now() + deps.tools.approvalTimeoutMs,
  });
  const open: Open = { t: 'approval_open', ...binding, id: record.id, expiresAt: record.expiresAt };
  await journal.write([open]);
  if (!out.approvalCard) {
    log.warn({ tool: request.name }, 'this platform cannot show approval buttons; the call is denied');
    await deps.tools.approvals.refuse(record.id, `policy (${to.platform} cannot ask for approval)`);
    return;
  }
  const messageId = await out.approvalCard(to, cardOf(record));
  await journal.write([{ t: 'approval_card', step: request.step, callId: request.callId, messageId }]);
  ctx.trace.line(`approval ${record.id}: ${request.name} ${request.args} waits for ${record.requesterName ?? record.requester} or an approver`);
  log.info({ tool: request.name, approval: record.id, expiresAt: record.expiresAt }, 'run parked until approved, denied or expired');
  await park(ctx, open);
}

/**
 * Before a run goes on with a turn that asked for approval: each decision is written to the
 * journal (an expired one as a deny) and shown on its card. Still waiting: the job is parked
 * again. Returns 'cancelled' when the run was stopped while it waited.
 */
export async function resolveApprovals(ctx: RunContext, journal: TurnJournal, out: OutboundAdapter, to: InboundMessage): Promise<'ready' | 'cancelled'> {
  const { deps } = ctx;
  let cancelled = false;
  for (const open of journal.undecidedApprovals) {
    let record = await deps.tools.approvals.get(open.id);
    // A record of another call (or another run) decides nothing here: treated as gone.
    if (record && (record.jobId !== ctx.jobId || !sameCall(open, record))) record = null;
    if (record?.status === 'pending' && Date.now() < open.expiresAt) return park(ctx, open);
    if (record?.status === 'pending') record = await deps.tools.approvals.expire(open.id);
    // A record gone from Redis (past its retention) counts as expired too.
    const status = record && record.status !== 'pending' ? record.status : 'expired';
    const by = record?.by ?? 'expiry';
    const at = record?.at ?? Date.now();
    if (status === 'cancelled') cancelled = true;
    else await journal.write([{ t: 'approval', step: open.step, callId: open.callId, tool: open.tool, argsHash: open.argsHash, decision: status, by, at }]);
    deps.metrics?.approvals.inc({ outcome: status });
    ctx.trace.line(`approval ${open.id}: ${status} by ${by} at ${new Date(at).toISOString()}`);
    const cardId = journal.approvalCardOf(open);
    if (cardId !== undefined && record && out.approvalDecided) {
      await out
        .approvalDecided(to, cardId, cardOf(record), { decision: status, by, at })
        .catch((err: unknown) => ctx.log.warn({ err }, 'could not show the decision on the approval card'));
    }
  }
  return cancelled ? 'cancelled' : 'ready';
}

async function park(ctx: RunContext, open: Open): Promise<never> {
  await ctx.job.moveToDelayed(open.expiresAt, ctx.token);
  // A click that came before the job was delayed could not wake it: look once more now.
  if ((await ctx.deps.tools.approvals.get(open.id))?.status !== 'pending') await ctx.deps.tools.approvals.wake(ctx.jobId);
  throw new DelayedError();
}
