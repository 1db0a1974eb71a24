import type { Redis } from 'ioredis';
import { RedisKeys } from './keys.js';

/** One MCP server as one worker sees it. */
export interface ToolServerStatus {
  name: string;
  state: 'connected' | 'connecting' | 'down';
  tools: number;
  error?: string;
}

/** A worker's report is current for this long (it writes one every REPORT_EVERY_MS). */
const FRESH_MS = 60_000;
export const REPORT_EVERY_MS = 15_000;

const key = (prefix: string) => new RedisKeys(prefix).toolServerReports;

/**
 * Where each worker reports the MCP servers it is connected to, so a gateway's /readyz can name a
 * server that is down on some worker (servers run per worker: stdio ones are its child processes).
 */
export async function reportToolServers(redis: Redis, prefix: string, workerId: string, servers: readonly ToolServerStatus[], now = Date.now()): Promise<void> {
  await redis.hset(key(prefix), workerId, JSON.stringify({ at: now, servers }));
}

export async function forgetToolServers(redis: Redis, prefix: string, workerId: string): Promise<void> {
  await redis.hdel(key(prefix), workerId);
}

/** Every server that is not connected on some worker whose report is fresh: "name: down on 2 worker(s) (error)". */
export async function toolServerProblems(redis: Redis, prefix: string, now = Date.now()): Promise<string[]> {
  const reports = await redis.hgetall(key(prefix));
  const down = new Map<string, { workers: number; error?: string }>();
  for (const [workerId, raw] of Object.entries(reports)) {
    const report = JSON.parse(raw) as { at: number; servers: ToolServerStatus[] };
    if (now - report.at > FRESH_MS) {
      await redis.hdel(key(prefix), workerId);
      continue;
    }
    for (const s of report.servers) {
      if (s.state === 'connected') continue;
      const seen = down.get(s.name) ?? { workers: 0 };
      down.set(s.name, { workers: seen.workers + 1, ...(s.error !== undefined ? { error: s.error } : seen.error !== undefined ? { error: seen.error } : {}) });
    }
  }
  return [...down].map(([name, d]) => `mcp server ${name}: not connected on ${d.workers} worker(s)${d.error ? ` (${d.error})` : ''}`);
}
