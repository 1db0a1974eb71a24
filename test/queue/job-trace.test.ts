import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { SessionKeys } from '../../src/queue/keys.js';
import { JobTrace } from '../../src/run/job-trace.js';
import { createLogger } from '../../src/log.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

const FLUSH_MS = 60;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The commands one connection sends, as the server saw them (MONITOR, filtered to that client: other tests share the server). */
async function watchCommands(redis: Redis): Promise<{ seen: string[][]; stop: () => void }> {
  const addr = /addr=(\S+)/.exec(String(await redis.call('CLIENT', 'INFO')))![1]!;
  const monitor = await testRedis().monitor();
  const seen: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === addr) seen.push(args);
  });
  return { seen, stop: () => monitor.disconnect() };
}

describe('the job trace (the dashboard view of a run, written behind it)', () => {
  const prefix = uniquePrefix('trace');
  let redis: Redis;
  let queue: Queue;
  const keys = new SessionKeys(prefix, 'runs');
  const log = createLogger('silent');

  beforeAll(async () => {
    redis = testRedis();
    queue = new Queue('runs', { connection: testRedis(), prefix });
  });
  afterAll(async () => {
    await queue.close();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  const newJob = () => queue.add('t', { v: 1, session: 'terminal:x' });

  it('writes the rows and the data of a run shorter than the wait in one script call, in order, when it closes', async () => {
    const job = await newJob();
    const trace = new JobTrace(redis, keys, job, log, FLUSH_MS);
    trace.setData({ ...job.data, runId: 'r1' });
    for (let i = 0; i < 5; i++) trace.line(`row ${i}`);
    trace.progress({ step: 1, phase: 'model' });
    expect((await queue.getJobLogs(job.id!)).count).toBe(0);
    const watch = await watchCommands(redis);
    await trace.close();
    await redis.ping(); // MONITOR has seen everything before this reply
    await sleep(20);
    watch.stop();
    // EVAL the first time on a connection, EVALSHA after: one script call either way.
    expect(watch.seen.map((args) => args[0]!.toLowerCase().replace(/^evalsha$/, 'eval'))).toEqual(['eval', 'ping']);
    expect((await queue.getJobLogs(job.id!)).logs).toEqual(['row 0', 'row 1', 'row 2', 'row 3', 'row 4']);
    const stored = await queue.getJob(job.id!);
    expect(stored?.data).toEqual({ v: 1, session: 'terminal:x', runId: 'r1' });
    // A phase that ended with the run is not shown as progress.
    expect(stored?.progress).toBe(0);
    trace.line('after close');
    await trace.close();
    expect((await queue.getJobLogs(job.id!)).count).toBe(5);
  });

  it('writes rows while the run goes on, and shows a phase that lasts as the job progress', async () => {
    const job = await newJob();
    const trace = new JobTrace(redis, keys, job, log, FLUSH_MS);
    trace.line('first');
    trace.progress({ step: 1, phase: 'tool run_command' });
    await sleep(FLUSH_MS * 4);
    expect((await queue.getJobLogs(job.id!)).logs).toEqual(['first']);
    expect((await queue.getJob(job.id!))?.progress).toEqual({ step: 1, phase: 'tool run_command' });
    trace.line('second');
    await trace.close();
    expect((await queue.getJobLogs(job.id!)).logs).toEqual(['first', 'second']);
  });

  it('shows a phase that began just before a flush once it is old enough', async () => {
    const job = await newJob();
    const trace = new JobTrace(redis, keys, job, log, FLUSH_MS);
    trace.line('a row starts the wait');
    await sleep(FLUSH_MS - 20);
    trace.progress({ step: 2, phase: 'model' });
    await sleep(FLUSH_MS * 3);
    expect((await queue.getJob(job.id!))?.progress).toEqual({ step: 2, phase: 'model' });
    await trace.close();
  });

  it('writes a long backlog in slices, all of it in order', async () => {
    const job = await newJob();
    const trace = new JobTrace(redis, keys, job, log, FLUSH_MS);
    const rows = Array.from({ length: 1_234 }, (_, i) => `row ${i}`);
    for (const row of rows) trace.line(row);
    await trace.close();
    expect((await queue.getJobLogs(job.id!, 0, -1)).logs).toEqual(rows);
  });

  it('writes nothing for a job that is gone, and does not fail the run', async () => {
    const job = await newJob();
    const trace = new JobTrace(redis, keys, job, log, FLUSH_MS);
    await job.remove();
    trace.line('to nowhere');
    await expect(trace.close()).resolves.toBeUndefined();
    expect(await redis.exists(keys.jobLogs(job.id!))).toBe(0);
  });
});
