import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { AccessGate } from '../../src/access/gate.js';
import { gatedApprovals } from '../../src/approvals/gated.js';
import { PairingStore } from '../../src/access/pairing-store.js';
import { bindingOf } from '../../src/agent/approval-binding.js';
import { deriveConfig } from '../../src/config/config.js';
import { parseEnv } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { ApprovalDesk, type ApprovalRecord } from '../../src/approvals/desk.js';
import { SessionKeys } from '../../src/queue/keys.js';
import { createRunQueue, type RunQueue } from '../../src/queue/run-queue.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

/**
 * Findings (medium and low): the requester approved their own call even when APPROVERS was set;
 * an approval click was not checked against the card's platform and chat; and a click never
 * passed the access gate. Real Redis, the real desk and gate, the configuration as parsed at start.
 */
let redis: Redis;
let prefix: string;
let keys: SessionKeys;
let queue: RunQueue;
beforeAll(async () => {
  redis = testRedis();
  prefix = uniquePrefix('sec-deciders');
  keys = new SessionKeys(prefix, 'runs');
  queue = createRunQueue({ name: 'runs', prefix } as never, redis);
});
afterAll(async () => {
  await dropPrefix(redis, prefix);
  await queue.close();
  redis.disconnect();
});

const configOf = (env: Record<string, string>) => deriveConfig(parseEnv({ ...env }));

async function openCard(desk: ApprovalDesk): Promise<ApprovalRecord> {
  const args = JSON.stringify({ command: 'deploy' });
  return desk.open({
    session: 'slack:C1:1.0',
    jobId: 'job-1',
    ...bindingOf({ step: 1, callId: 'c1', name: 'run_command', args }),
    args,
    platform: 'slack',
    conversation: 'C1',
    requester: 'U0ASKER',
    requesterName: 'asker',
    expiresAt: Date.now() + 60_000,
  });
}

describe('security: who may decide an approval', () => {
  it('with APPROVERS set, the requester cannot approve their own call by default; an approver can', async () => {
    const config = configOf({ APPROVERS: 'slack:U0BOSS' });
    expect(config.approvals.by).toBe('approvers');
    const desk = new ApprovalDesk(redis, keys, queue, config.approvals);
    const card = await openCard(desk);
    expect((await desk.decide(card.id, 'approved', { platform: 'slack', userId: 'U0ASKER', chat: 'C1' })).kind).toBe('not_allowed');
    expect((await desk.decide(card.id, 'approved', { platform: 'slack', userId: 'U0BOSS', chat: 'C1' })).kind).toBe('decided');
  });

  it('APPROVAL_BY=either lets both decide; APPROVAL_BY=approvers without APPROVERS is a start-up error', async () => {
    const desk = new ApprovalDesk(redis, keys, queue, configOf({ APPROVERS: 'slack:U0BOSS', APPROVAL_BY: 'either' }).approvals);
    expect((await desk.decide((await openCard(desk)).id, 'approved', { platform: 'slack', userId: 'U0ASKER', chat: 'C1' })).kind).toBe('decided');
    expect(() => configOf({ APPROVAL_BY: 'approvers' })).toThrow(/APPROVERS is required when APPROVAL_BY=approvers/);
  });

  it("a click counts only on the card's own platform and chat", async () => {
    const desk = new ApprovalDesk(redis, keys, queue, configOf({ APPROVAL_BY: 'either', APPROVERS: 'slack:U0BOSS,telegram:U0BOSS' }).approvals);
    const card = await openCard(desk);
    expect((await desk.decide(card.id, 'approved', { platform: 'slack', userId: 'U0BOSS', chat: 'C2' })).kind).toBe('unknown');
    expect((await desk.decide(card.id, 'approved', { platform: 'telegram', userId: 'U0BOSS', chat: 'C1' })).kind).toBe('unknown');
    expect((await desk.get(card.id))?.status).toBe('pending');
    expect((await desk.decide(card.id, 'approved', { platform: 'slack', userId: 'U0BOSS', chat: 'C1' })).kind).toBe('decided');
  });

  it('a click passes the access gate first: a Slack Connect user or an unpaired Telegram stranger changes nothing', async () => {
    const config = configOf({ APPROVAL_BY: 'either', APPROVERS: 'slack:U0BOSS' });
    const desk = new ApprovalDesk(redis, keys, queue, config.approvals);
    const gate = new AccessGate(config.access, new PairingStore(redis, prefix), createLogger('silent'), { approvers: config.approvals.approvers });
    const port = gatedApprovals(gate, desk);
    const card = await openCard(desk);
    // The requester, from another organisation in a shared channel: the place does not vouch for them.
    expect((await port.decide(card.id, 'approved', { platform: 'slack', userId: 'U0ASKER', chat: 'C1', foreign: true })).kind).toBe('no_access');
    expect((await desk.get(card.id))?.status).toBe('pending');
    expect((await port.decide(card.id, 'approved', { platform: 'telegram', userId: '777', chat: '-100' })).kind).toBe('no_access');
    expect((await port.decide(card.id, 'approved', { platform: 'slack', userId: 'U0ASKER', chat: 'C1' })).kind).toBe('decided');
  });
});
