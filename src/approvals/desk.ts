import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { ApprovalDecision } from '../agent/types.js';
import type { ApprovalClicker, ChannelApprovals, ChannelDecideResult } from '../channels/types.js';
import { argsHash, type ApprovalBinding } from '../agent/approval-binding.js';
import { mayDecide, type ApprovalRule } from '../tools/policy.js';
import type { SessionKeys } from '../queue/keys.js';
import type { MemoryEntry } from '../memory/entry.js';
import { MemoryStore, type MemoryOwner } from '../memory/store.js';
import { byCode, defineScript, runScript } from '../queue/redis-scripts.js';
import type { RunQueue } from '../queue/run-queue.js';

/**
 * A tool call waiting for a click, as the card, the gateway's click handler and the resumed run
 * see it: bound to its run (job), the call (step, id, tool, arguments hash) and the card's place.
 */
export interface ApprovalRecord extends ApprovalBinding {
  id: string;
  /** `memory`: a pending memory entry waiting for its owner's Keep (no job: jobId is ''); see `openMemoryCard`. */
  kind?: 'memory';
  session: string;
  jobId: string;
  args: string;
  /** Where the card is: a click counts only on this platform, in this chat. */
  platform: string;
  conversation: string;
  /** Who sent the message that started the run: they may decide, as may the APPROVERS (a memory card: they alone). */
  requester: string;
  requesterName?: string;
  expiresAt: number;
  status: 'pending' | ApprovalDecision | 'cancelled';
  /** Who decided (a display name or id), and when. */
  by?: string;
  at?: number;
  /** A memory card's entry: whose memory (agent namespace and owner) and which entry. */
  memory?: MemoryRef;
  /** The card's message id, recorded once it is posted (a memory card's: the gateway edits it when decided). */
  messageId?: string;
}

/** Which memory entry a memory card decides. */
export interface MemoryRef extends MemoryOwner {
  entry: string;
}

/** What a memory card is opened with: the entry, whose memory it is, and where the card goes (the turn's message). */
export interface MemoryCardRequest {
  session: string;
  platform: string;
  conversation: string;
  /** The person whose turn wrote it: they alone decide (never APPROVERS: it is their memory). */
  requester: string;
  requesterName?: string;
  who: MemoryOwner;
  entry: Pick<MemoryEntry, 'id' | 'text'>;
}

/** How long a memory card can be decided; unanswered, the entry stays pending (never used) and /memory still lists it. */
export const MEMORY_CARD_TTL_MS = 7 * 24 * 3600 * 1000;

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

// Records where the card is, only while the record is there (never a hash without its expiry). → 1 · 0 gone
const CARD_POSTED = defineScript({
  name: 'sbCardPosted',
  keys: ['approval'],
  args: ['messageId'],
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'messageId', ARGV[1])
return 1
`,
  decode: byCode({ 1: 'recorded', 0: 'gone' }),
});

/** Approval records outlive their expiry by this much (for a late click's answer and the audit). */
const KEEP_AFTER_EXPIRY_S = 24 * 3600;

/**
 * Pending approvals in Redis. A run that needs one opens it and parks its job (delayed until the
 * expiry); a click decides it once (a second click, or one by someone who may not decide, changes
 * nothing) and wakes the job, which resumes the turn from its journal on any worker. A memory
 * card is one too, with no job: its click keeps or forgets the entry (the `memory` store).
 */
export class ApprovalDesk implements ChannelApprovals {
  /** Where a memory card's Keep / Discard is applied. */
  private readonly memory: MemoryStore;

  constructor(
    private readonly redis: Redis,
    private readonly keys: SessionKeys,
    private readonly queue: RunQueue,
    private readonly rule: ApprovalRule = { by: 'requester', approvers: [] },
    options: { memory?: MemoryStore } = {},
  ) {
    // Keep and Discard never add an entry, so the store's limits do not matter here.
    this.memory = options.memory ?? new MemoryStore(redis, keys, { maxEntries: Number.MAX_SAFE_INTEGER });
  }

  async open(request: Omit<ApprovalRecord, 'id' | 'status'>): Promise<ApprovalRecord> {
    const record: ApprovalRecord = { ...request, id: newId(), status: 'pending' };
    const ttl = ttlOf(record);
    await this.redis
      .multi()
      .hset(this.key(record.id), flatten(record))
      .expire(this.key(record.id), ttl)
      .set(this.keys.approvalOf(request.session), record.id, 'EX', ttl)
      .exec();
    return record;
  }

  /**
   * A memory written in a turn that read tool results: a card asks its owner to Keep or Discard
   * it. No run waits (no job), and the session's approval pointer is left alone, so /stop and
   * /status never see it.
   */
  async openMemoryCard(request: MemoryCardRequest): Promise<ApprovalRecord> {
    const args = JSON.stringify({ text: request.entry.text });
    const { who, entry, ...place } = request;
    const record: ApprovalRecord = {
      ...place,
      id: newId(),
      kind: 'memory',
      jobId: '',
      step: 0,
      callId: entry.id,
      tool: 'remember',
      argsHash: argsHash(args),
      args,
      expiresAt: Date.now() + MEMORY_CARD_TTL_MS,
      status: 'pending',
      memory: { agent: who.agent, owner: who.owner, entry: entry.id },
    };
    await this.redis.multi().hset(this.key(record.id), flatten(record)).expire(this.key(record.id), ttlOf(record)).exec();
    return record;
  }

  /** The card's message, once posted (only while the record is there). */
  async cardPosted(id: string, messageId: string): Promise<void> {
    await runScript(this.redis, CARD_POSTED, { keys: { approval: this.key(id) }, args: { messageId } });
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
    if (record.kind === 'memory') return this.decideMemory(record, decision, clicker);
    if (!mayDecide(this.rule, record.platform, clicker.userId, record.requester)) return { kind: 'not_allowed', record };
    return this.settle(record, decision, clicker.name ?? clicker.userId);
  }

  /**
   * Keep or Discard, by the person whose memory it is (never an approver, whatever APPROVAL_BY
   * says). Settled once, then applied to the entry; nothing wakes. A card past its time, or one
   * whose entry is gone (forgotten meanwhile), decides nothing.
   */
  private async decideMemory(record: ApprovalRecord, decision: 'approved' | 'denied', clicker: ApprovalClicker): Promise<DecideResult> {
    if (clicker.userId !== record.requester) return { kind: 'not_allowed', record };
    const ref = record.memory;
    if (!ref || Date.now() >= record.expiresAt) return { kind: 'unknown' };
    const who: MemoryOwner = { agent: ref.agent, owner: ref.owner };
    if (!(await this.memory.get(who, ref.entry))) return { kind: 'unknown' };
    const result = await this.settle(record, decision, clicker.name ?? clicker.userId);
    if (result.kind === 'decided') await (decision === 'approved' ? this.memory.keep(who, ref.entry) : this.memory.forget(who, ref.entry));
    return result;
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
    if (record.jobId) await this.wake(record.jobId);
    return { kind: 'decided', record: { ...record, status, by, at } };
  }

  private key(id: string): string {
    return this.keys.approval(id);
  }
}

// Short: it rides in Telegram's 64-byte callback data and Slack's and Discord's button ids.
const newId = () => randomBytes(9).toString('base64url');

const ttlOf = (record: ApprovalRecord) => Math.ceil((record.expiresAt - Date.now()) / 1000) + KEEP_AFTER_EXPIRY_S;

function flatten(record: ApprovalRecord): Record<string, string> {
  const { memory, ...rest } = record;
  const fields = { ...rest, ...(memory && { memoryAgent: memory.agent, memoryOwner: memory.owner, memoryEntry: memory.entry }) };
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  );
}

function unflatten(raw: Record<string, string>): ApprovalRecord {
  return {
    id: raw.id!,
    ...(raw.kind === 'memory' && { kind: 'memory' as const }),
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
    ...(raw.memoryAgent !== undefined &&
      raw.memoryOwner !== undefined &&
      raw.memoryEntry !== undefined && { memory: { agent: raw.memoryAgent, owner: raw.memoryOwner, entry: raw.memoryEntry } }),
    ...(raw.messageId !== undefined && { messageId: raw.messageId }),
  };
}
