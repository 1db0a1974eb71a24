import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Redis } from 'ioredis';
import { ApprovalDesk, MEMORY_CARD_TTL_MS } from '../../src/approvals/desk.js';
import { postMemoryCard } from '../../src/approvals/memory-card.js';
import { buttonLabels, cardFooter, cardOf, cardSubject, decidedAnswer, decisionLine, refusalText } from '../../src/channels/kit/approval-card.js';
import type { ApprovalCard, InboundMessage, OutboundAdapter } from '../../src/channels/types.js';
import { deriveConfig } from '../../src/config/config.js';
import { parseEnv } from '../../src/config/load.js';
import { MemoryStore, type MemoryOwner } from '../../src/memory/store.js';
import { SessionKeys } from '../../src/queue/keys.js';
import { createRunQueue, type RunQueue } from '../../src/queue/run-queue.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

/**
 * A memory written in a turn that read tool results waits for its owner's Keep: the desk's memory
 * card, decided by the requester alone (never APPROVERS), applied to the store. Real Redis.
 */
let redis: Redis;
let prefix: string;
let keys: SessionKeys;
let queue: RunQueue;
let store: MemoryStore;
let desk: ApprovalDesk;
beforeAll(async () => {
  redis = testRedis();
  prefix = uniquePrefix('memory-card');
  keys = new SessionKeys(prefix, 'runs');
  queue = createRunQueue({ name: 'runs', prefix } as never, redis);
  store = new MemoryStore(redis, keys, { maxEntries: 500 });
  // APPROVERS set: run approvals are theirs to decide (APPROVAL_BY=approvers); a memory card is still only its owner's.
  desk = new ApprovalDesk(redis, keys, queue, deriveConfig(parseEnv({ APPROVERS: 'slack:U0BOSS' })).approvals, { memory: store });
});
afterEach(() => {
  vi.useRealTimers();
});
afterAll(async () => {
  await dropPrefix(redis, prefix);
  await queue.close();
  redis.disconnect();
});

const SESSION = 'slack:C1:1.0';
const ADA = { platform: 'slack', userId: 'U0ADA', name: '@ada', chat: 'C1' };
let seq = 0;

/** A pending (derived) entry of Ada's and its card. */
async function pendingCard(text = `Ada prefers tea (${++seq})`) {
  const who: MemoryOwner = { agent: 'default', owner: `slack:U0ADA:${++seq}` };
  const { entry } = await store.remember(who, text, 'derived');
  expect(entry.state).toBe('pending');
  const record = await desk.openMemoryCard({
    session: SESSION,
    platform: 'slack',
    conversation: 'C1',
    requester: 'U0ADA',
    requesterName: 'ada',
    who,
    entry,
  });
  return { who, entry, record };
}

describe('the desk: memory cards', () => {
  it('is a record of its own kind with no job, waiting a week, invisible to /stop and /status', async () => {
    const before = Date.now();
    const { who, entry, record } = await pendingCard('Ada is allergic to nuts');
    expect(record).toMatchObject({ kind: 'memory', jobId: '', tool: 'remember', status: 'pending', requester: 'U0ADA', requesterName: 'ada' });
    expect(JSON.parse(record.args)).toEqual({ text: 'Ada is allergic to nuts' });
    expect(record.expiresAt).toBeGreaterThanOrEqual(before + MEMORY_CARD_TTL_MS);
    expect(await desk.get(record.id)).toEqual({ ...record, memory: { agent: who.agent, owner: who.owner, entry: entry.id } });
    expect(await redis.get(keys.approvalOf(SESSION))).toBeNull();
    expect(await desk.pendingOf(SESSION)).toBeNull();
    expect(await desk.cancel(SESSION)).toBe(false);
    expect((await desk.get(record.id))?.status).toBe('pending');
  });

  it('Keep by the requester keeps the entry; a second click is told it is decided and changes nothing', async () => {
    const { who, entry, record } = await pendingCard();
    const kept = await desk.decide(record.id, 'approved', ADA);
    expect(kept).toMatchObject({ kind: 'decided', record: { kind: 'memory', status: 'approved', by: '@ada' } });
    expect((await store.get(who, entry.id))?.state).toBe('kept');
    const again = await desk.decide(record.id, 'denied', ADA);
    expect(again.kind).toBe('already');
    expect(refusalText(again as Exclude<typeof again, { kind: 'decided' }>)).toBe('Already decided: kept by @ada.');
    expect((await store.get(who, entry.id))?.state).toBe('kept');
  });

  it('Discard by the requester forgets the entry', async () => {
    const { who, entry, record } = await pendingCard();
    expect(await desk.decide(record.id, 'denied', ADA)).toMatchObject({ kind: 'decided', record: { status: 'denied', by: '@ada' } });
    expect(await store.get(who, entry.id)).toBeUndefined();
    const again = await desk.decide(record.id, 'approved', ADA);
    expect(again.kind).toBe('already');
    expect(await store.get(who, entry.id)).toBeUndefined();
  });

  it('anyone else, an approver too, is not allowed; a click from another chat is unknown; the entry stays pending', async () => {
    const { who, entry, record } = await pendingCard();
    const bob = await desk.decide(record.id, 'approved', { platform: 'slack', userId: 'U0BOB', name: '@bob', chat: 'C1' });
    expect(bob.kind).toBe('not_allowed');
    expect(refusalText(bob as Exclude<typeof bob, { kind: 'decided' }>)).toBe('Only the person whose memory this is can decide whether it is kept.');
    expect((await desk.decide(record.id, 'approved', { platform: 'slack', userId: 'U0BOSS', name: '@boss', chat: 'C1' })).kind).toBe('not_allowed');
    expect((await desk.decide(record.id, 'denied', { platform: 'slack', userId: 'U0BOSS', name: '@boss', chat: 'C1' })).kind).toBe('not_allowed');
    expect((await desk.decide(record.id, 'approved', { ...ADA, chat: 'C2' })).kind).toBe('unknown');
    expect((await desk.decide(record.id, 'approved', { ...ADA, platform: 'telegram' })).kind).toBe('unknown');
    expect((await store.get(who, entry.id))?.state).toBe('pending');
    expect((await desk.get(record.id))?.status).toBe('pending');
    expect((await desk.decide(record.id, 'approved', ADA)).kind).toBe('decided');
  });

  it('a card whose entry was forgotten meanwhile, or one past its week, decides nothing', async () => {
    const gone = await pendingCard();
    await store.forget(gone.who, gone.entry.id);
    expect((await desk.decide(gone.record.id, 'approved', ADA)).kind).toBe('unknown');
    expect(await store.get(gone.who, gone.entry.id)).toBeUndefined();

    const late = await pendingCard();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(late.record.expiresAt + 1);
    expect((await desk.decide(late.record.id, 'approved', ADA)).kind).toBe('unknown');
    vi.useRealTimers();
    expect((await store.get(late.who, late.entry.id))?.state).toBe('pending');
  });

  it('a run approval is unchanged: APPROVERS decide it, the requester does not', async () => {
    const record = await desk.open({
      session: 'slack:C1:2.0',
      jobId: 'no-such-job',
      step: 1,
      callId: 'c1',
      tool: 'run_command',
      argsHash: 'x',
      args: '{"command":"ls"}',
      platform: 'slack',
      conversation: 'C1',
      requester: 'U0ADA',
      expiresAt: Date.now() + 60_000,
    });
    expect((await desk.decide(record.id, 'approved', ADA)).kind).toBe('not_allowed');
    expect((await desk.decide(record.id, 'approved', { platform: 'slack', userId: 'U0BOSS', chat: 'C1' })).kind).toBe('decided');
  });
});

describe('postMemoryCard', () => {
  const to: InboundMessage = {
    v: 1,
    id: 'm1',
    platform: 'slack',
    conversation: 'C1',
    thread: '1.0',
    sender: { id: 'U0ADA', name: 'ada' },
    text: 'read the notes and remember what matters',
    attachments: [],
    eventId: 'Ev1',
    receivedAt: 0,
  };
  const outbound = (withCards: boolean): OutboundAdapter & { cards: ApprovalCard[] } => {
    const cards: ApprovalCard[] = [];
    return {
      platform: 'slack',
      editIntervalMs: 0,
      cards,
      post: async () => [],
      classifyWriteError: () => 'refused',
      edit: async () => undefined,
      ...(withCards && {
        approvalCard: async (_to: InboundMessage, card: ApprovalCard) => {
          cards.push(card);
          return '1700000000.000123';
        },
      }),
    };
  };

  it("opens the card, posts it where the turn came from and records the card's message", async () => {
    const who: MemoryOwner = { agent: 'default', owner: 'slack:U0ADA:post' };
    const { entry } = await store.remember(who, 'The project deadline is Friday', 'derived');
    const out = outbound(true);
    const posted = await postMemoryCard(desk, out, to, entry, who);
    expect(posted).toMatchObject({
      kind: 'memory',
      session: 'slack:C1:1.0',
      platform: 'slack',
      conversation: 'C1',
      requester: 'U0ADA',
      messageId: '1700000000.000123',
    });
    expect(out.cards).toEqual([
      { id: posted!.id, kind: 'memory', tool: 'remember', args: JSON.stringify({ text: entry.text }), requester: 'ada', expiresAt: posted!.expiresAt },
    ]);
    expect((await desk.get(posted!.id))?.messageId).toBe('1700000000.000123');
    expect(await redis.get(keys.approvalOf('slack:C1:1.0'))).toBeNull();
  });

  it('on a platform that cannot show buttons nothing is opened: the entry stays pending', async () => {
    const who: MemoryOwner = { agent: 'default', owner: 'slack:U0ADA:nocards' };
    const { entry } = await store.remember(who, 'Ada likes long walks', 'derived');
    expect(await postMemoryCard(desk, outbound(false), to, entry, who)).toBeUndefined();
    expect((await store.get(who, entry.id))?.state).toBe('pending');
  });

  it('a card posted to a record that is gone records nothing (no hash without its expiry)', async () => {
    await desk.cardPosted('no-such-card', '1');
    expect(await redis.exists(keys.approval('no-such-card'))).toBe(0);
  });
});

describe('the kit: what a memory card says', () => {
  const card: ApprovalCard = cardOf({
    id: 'x',
    kind: 'memory',
    tool: 'remember',
    args: JSON.stringify({ text: 'Ada is on call on Mondays' }),
    requester: 'U0ADA',
    requesterName: '@ada',
    expiresAt: Date.UTC(2030, 0, 1),
  });
  const at = Date.UTC(2030, 0, 1, 9, 30);

  it('asks "Remember this?" with the text, says who decides and what Keep means, and labels the buttons Keep / Discard', () => {
    expect(cardSubject(card)).toEqual({ label: 'Remember this?', code: 'Ada is on call on Mondays' });
    expect(cardFooter(card)).toBe('Only @ada can decide. Kept, it is used in their later conversations with this assistant; until then it is not used.');
    expect(buttonLabels(card)).toEqual({ approve: 'Keep', deny: 'Discard' });
    expect(buttonLabels({})).toEqual({ approve: 'Approve', deny: 'Deny' });
  });

  it('the decision lines and the click answers', () => {
    expect(decisionLine({ decision: 'approved', by: '@ada', at }, card)).toBe('✅ Kept by @ada at 09:30 UTC');
    expect(decisionLine({ decision: 'denied', by: '@ada', at }, card)).toBe('🗑 Discarded by @ada at 09:30 UTC');
    expect(decisionLine({ decision: 'approved', by: '@ada', at })).toBe('✅ Approved by @ada at 09:30 UTC');
    expect(decidedAnswer({ kind: 'memory', status: 'approved' })).toBe('Kept: I will use it from now on.');
    expect(decidedAnswer({ kind: 'memory', status: 'denied' })).toBe('Discarded: forgotten.');
    expect(decidedAnswer({ status: 'approved' })).toBe('Approved: the run goes on.');
  });
});
