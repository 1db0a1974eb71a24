import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { formatStatus, SessionControl, type SessionStatus } from '../../src/session/control.js';
import { SessionKeys } from '../../src/queue/keys.js';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

describe('formatStatus', () => {
  const NOW = 1_700_000_000_000;

  it('idle with nothing queued', () => {
    expect(formatStatus({ running: false, queued: 0 }, NOW)).toBe('No run is active.');
  });

  it('idle with messages waiting for a worker', () => {
    expect(formatStatus({ running: false, queued: 2 }, NOW)).toBe('No run is active. 2 message(s) waiting for a worker.');
  });

  it('running, counting the messages being answered', () => {
    expect(formatStatus({ running: true, queued: 1 }, NOW)).toBe(
      'A run is working on this conversation. 1 message(s) in its queue, counting the ones being answered.',
    );
    expect(formatStatus({ running: true, queued: 0 }, NOW)).toBe(
      'A run is working on this conversation. 0 message(s) in its queue, counting the ones being answered.',
    );
  });

  it('the last run with its reason and how long ago, rounded to seconds', () => {
    const s: SessionStatus = {
      running: false,
      queued: 0,
      last: { runId: 'r1', messageIds: [], steps: 1, toolCalls: 0, state: 'failed', reason: 'step_limit', at: NOW - 5_400 },
    };
    expect(formatStatus(s, NOW)).toBe('No run is active. Last run: failed (step_limit), 5 s ago.');
  });

  it('the last run without a reason', () => {
    const s: SessionStatus = { running: true, queued: 3, last: { runId: 'r1', messageIds: [], steps: 1, toolCalls: 0, state: 'completed', at: NOW - 61_600 } };
    expect(formatStatus(s, NOW)).toBe(
      'A run is working on this conversation. 3 message(s) in its queue, counting the ones being answered. Last run: completed, 62 s ago.',
    );
  });

  it('a last run stamped in the future (clock skew between hosts) is 0 s ago', () => {
    const s: SessionStatus = {
      running: false,
      queued: 0,
      last: { runId: 'r1', messageIds: [], steps: 1, toolCalls: 0, state: 'cancelled', reason: 'cancelled', at: NOW + 10_000 },
    };
    expect(formatStatus(s, NOW)).toBe('No run is active. Last run: cancelled (cancelled), 0 s ago.');
  });
});

describe('SessionControl (real Redis)', () => {
  let redis: Redis;
  let sub: Redis;
  let prefix: string;
  let keys: SessionKeys;
  let control: SessionControl;
  const session = sessionKeyOf({ platform: 'slack', conversation: 'C0123', thread: '1712345678.000100' });
  const received: Array<[string, string]> = [];

  beforeAll(() => {
    redis = testRedis();
    sub = testRedis();
    sub.on('message', (channel: string, message: string) => received.push([channel, message]));
  });

  beforeEach(async () => {
    prefix = uniquePrefix('control');
    keys = new SessionKeys(prefix, 'runs');
    control = new SessionControl(redis, keys);
    received.length = 0;
    await sub.subscribe(keys.cancelChannel);
  });

  afterEach(async () => {
    await sub.unsubscribe(keys.cancelChannel);
    await dropPrefix(redis, prefix);
  });

  afterAll(() => {
    sub.disconnect();
    redis.disconnect();
  });

  /** Publishes a marker after the call under test: the subscriber sees messages in the order Redis ran them. */
  async function publishedBefore(marker: string): Promise<string[]> {
    await redis.publish(keys.cancelChannel, marker);
    const deadline = Date.now() + 5_000;
    while (!received.some(([, m]) => m === marker)) {
      if (Date.now() > deadline) throw new Error('the marker never arrived');
      await new Promise((r) => setTimeout(r, 10));
    }
    const upTo = received.findIndex(([, m]) => m === marker);
    for (const [channel] of received) expect(channel).toBe(keys.cancelChannel);
    return received.slice(0, upTo).map(([, m]) => m);
  }

  it('status of an unknown session: not running, nothing queued, no last run', async () => {
    expect(await control.status(session)).toEqual({ running: false, queued: 0 });
  });

  it('status reads the queued count and the last outcome', async () => {
    await redis.rpush(keys.inbox(session), '{"id":"a"}', '{"id":"b"}');
    const last = { runId: 'run-9', state: 'failed', reason: 'model_error', at: 1_700_000_000_000, steps: 3, toolCalls: 2 };
    await redis.set(keys.last(session), JSON.stringify(last));
    expect(await control.status(session)).toEqual({ running: false, queued: 2, last });
  });

  it('status is running only while the owner job holds its lock', async () => {
    await redis.set(keys.owner(session), 'job-1');
    expect((await control.status(session)).running).toBe(false);
    await redis.set(keys.jobLock('job-1'), 'worker-token');
    expect(await control.status(session)).toEqual({ running: true, queued: 0 });
    // Another session's owner does not count.
    expect((await control.status(`${session}x`)).running).toBe(false);
  });

  it('a run whose reply is committed (outbox written) is only delivering: not running', async () => {
    await redis.set(keys.owner(session), 'job-1');
    await redis.set(keys.jobLock('job-1'), 'worker-token');
    await redis.set(keys.outbox(session), '{"v":1}');
    expect(await control.status(session)).toEqual({ running: false, queued: 0 });
  });

  it('the keys it reads are under the prefix, in the job lock BullMQ uses', () => {
    expect(keys.owner(session)).toBe(`${prefix}:s:${session}:owner`);
    expect(keys.jobLock('job-1')).toBe(`${prefix}:runs:job-1:lock`);
    expect(keys.cancelChannel).toBe(`${prefix}:cancel`);
  });

  it('stop returns false and publishes nothing when the session has no owner', async () => {
    expect(await control.stop(session)).toBe(false);
    expect(await publishedBefore('marker-1')).toEqual([]);
  });

  it("stop returns false and publishes nothing when the owner's job lock is gone", async () => {
    await redis.set(keys.owner(session), 'job-1');
    await redis.set(keys.jobLock('job-2'), 'another job is locked');
    expect(await control.stop(session)).toBe(false);
    expect(await publishedBefore('marker-2')).toEqual([]);
  });

  it('stop returns false and publishes nothing when the run is only delivering its committed reply', async () => {
    await redis.set(keys.owner(session), 'job-1');
    await redis.set(keys.jobLock('job-1'), 'worker-token');
    await redis.set(keys.outbox(session), '{"v":1}');
    expect(await control.stop(session)).toBe(false);
    expect(await publishedBefore('marker-4')).toEqual([]);
  });

  it('stop returns true and publishes the session key on the cancel channel when the run holds its lock', async () => {
    await redis.set(keys.owner(session), 'job-1');
    await redis.set(keys.jobLock('job-1'), 'worker-token');
    expect(await control.stop(session)).toBe(true);
    expect(await publishedBefore('marker-3')).toEqual([session]);
  });
});
