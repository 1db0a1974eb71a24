import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { ApprovalDecision } from '../agent/types.js';
import type { ApprovalClicker, ChannelApprovals, ChannelDecideResult } from '../channels/types.js';
import type { ApprovalBinding } from '../agent/approval-binding.js';
import { mayDecide, type ApprovalRule } from '../tools/policy.js';
import type { SessionKeys } from '../queue/keys.js';
import { byCode, defineScript, runScript } from '../queue/redis-scripts.js';
import type { RunQueue } from '../queue/run-queue.js';

/**
 * A tool call waiting for a click, as the card, the gateway's click handler and the resumed run
 * see it: bound to its run (job), the call (step, id, tool, arguments hash) and the card's place.
 */
export interface ApprovalRecord extends ApprovalBinding {
  id: string;
  session: string;
  jobId: string;
  args: string;
  /** Where the card is: a click counts only on this platform, in this chat. */
  platform: string;
  conversation: string;
  /** Who sent the message that started the run: they may decide, as may the APPROVERS. */
  requester: string;
  requesterName?: string;
  expiresAt: number;
  status: 'pending' | ApprovalDecision | 'cancelled';
  /** Who decided (a display name or id), and when. */
  by?: string;
  at?: number;
}

/** A click's result (channels/types.ts `ChannelDecideResult`, with the full record). */
export type DecideResult = ChannelDecideResult<ApprovalRecord>;

// Records the decision once: only a pending approval is decided.
const DECIDE = defineScript({
  name: 'sbDecide',
  keys: ['approval'],
  args: ['status', 'by', 'at'],
  lua: `
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'by', ARGV[2], 'at', ARGV[3])
return 1
`,
  decode: byCode({ 1: 'decided', 0: 'not_pending' }),
});

/** Approval records outlive their expiry by this much (for a late click's answer and the audit). */
const KEEP_AFTER_EXPIRY_S = 24 * 3600;

/**
 * Pending approvals in Redis. A run that needs one opens it and parks its job (delayed until the
 * expiry); a click decides it once (a second click, or one by someone who may not decide, changes
 * nothing) and wakes the job, which resumes the turn from its journal on any worker.
 */
export class ApprovalDesk implements ChannelApprovals {
  constructor(
    private readonly redis: Redis,
    private readonly keys: SessionKeys,
    private readonly queue: RunQueue,
    private readonly rule: ApprovalRule = { by: 'requester', approvers: [] },
  ) {}

  async open(request: Omit<ApprovalRecord, 'id' | 'status'>): Promise<ApprovalRecord> {
    // Short: it rides in Telegram's 64-byte callback data and Slack's and Discord's button ids.
    const id = randomBytes(9).toString('base64url');
    const record: ApprovalRecord = { ...request, id, status: 'pending' };
    const ttl = Math.ceil((request.expiresAt - Date.now()) / 1000) + KEEP_AFTER_EXPIRY_S;
    await this.redis.multi().hset(this.key(id), flatten(record)).expire(this.key(id), ttl).set(this.keys.approvalOf(request.session), id, 'EX', ttl).exec();
    return record;
  }

  async get(id: string): Promise<ApprovalRecord | null> {
    const raw = await this.redis.hgetall(this.key(id));
    return raw.id ? unflatten(raw) : null;
  }

  /** The approval a session's parked run waits for, if any (for /stop and /status). */
  async pendingOf(session: string): Promise<ApprovalRecord | null> {
    const id = await this.redis.get(this.keys.approvalOf(session));
    const record = id ? await this.get(id) : null;
    return record?.status === 'pending' ? record : null;
  }

  /**
   * A click. It counts only on the card's own platform and chat (a card id copied elsewhere
   * decides nothing); the clicker's id decides whether they may (APPROVAL_BY); the name is what the card shows.
   */
  async decide(id: string, decision: 'approved' | 'denied', clicker: ApprovalClicker): Promise<DecideResult> {
    const record = await this.get(id);
    if (!record) return { kind: 'unknown' };
    if (clicker.platform !== record.platform || clicker.chat !== record.conversation) return { kind: 'unknown' };
    if (record.status !== 'pending') return { kind: 'already', record };
    if (!mayDecide(this.rule, record.platform, clicker.userId, record.requester)) return { kind: 'not_allowed', record };
    return this.settle(record, decision, clicker.name ?? clicker.userId);
  }

  /** Nobody decided in time: expiry counts as a deny. */
  async expire(id: string): Promise<ApprovalRecord | null> {
    const record = await this.get(id);
    if (!record || record.status !== 'pending') return record;
    const result = await this.settle(record, 'expired', 'expiry');
    return 'record' in result ? result.record : null;
  }

  /** Denied without a click (the platform cannot ask), by the reason given. */
  async refuse(id: string, by: string): Promise<void> {
    const record = await this.get(id);
    if (record?.status === 'pending') await this.settle(record, 'denied', by);
  }

  /** /stop while a run waits: the run wakes and ends cancelled. False when nothing waits. */
  async cancel(session: string): Promise<boolean> {
    const record = await this.pendingOf(session);
    if (!record) return false;
    return (await this.settle(record, 'cancelled', 'stop')).kind === 'decided';
  }

  /** Wakes the parked job now rather than at the expiry (a job not delayed yet re-checks by itself). */
  async wake(jobId: string): Promise<void> {
    const job = await this.queue.getJob(jobId);
    if (job && (await job.isDelayed())) await job.promote().catch(() => undefined);
  }

  private async settle(record: ApprovalRecord, status: ApprovalRecord['status'], by: string): Promise<DecideResult> {
    const at = Date.now();
    if ((await runScript(this.redis, DECIDE, { keys: { approval: this.key(record.id) }, args: { status, by, at } })) === 'not_pending') {
      const now = await this.get(record.id);
      return now ? { kind: 'already', record: now } : { kind: 'unknown' };
    }
    await this.wake(record.jobId);
    return { kind: 'decided', record: { ...record, status, by, at } };
  }

  private key(id: string): string {
    return this.keys.approval(id);
  }
}

function flatten(record: ApprovalRecord): Record<string, string> {
  return Object.fromEntries(
    Object.entries(record)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  );
}

function unflatten(raw: Record<string, string>): ApprovalRecord {
  return {
    id: raw.id!,
    session: raw.session!,
    jobId: raw.jobId!,
    step: Number(raw.step),
    callId: raw.callId!,
    tool: raw.tool!,
    argsHash: raw.argsHash!,
    args: raw.args!,
    platform: raw.platform!,
    conversation: raw.conversation!,
    requester: raw.requester!,
    ...(raw.requesterName !== undefined && { requesterName: raw.requesterName }),
    expiresAt: Number(raw.expiresAt),
    status: raw.status as ApprovalRecord['status'],
    ...(raw.by !== undefined && { by: raw.by }),
    ...(raw.at !== undefined && { at: Number(raw.at) }),
  };
}
