import type { Redis } from 'ioredis';
import type { SessionKeys } from './keys.js';

export interface SessionStatus {
  running: boolean;
  queued: number;
  last?: { runId: string; state: string; reason?: string; at: number; steps?: number; toolCalls?: number };
}

/** What /stop and /status do, from any process: they read and signal through Redis only. */
export class SessionControl {
  constructor(
    private readonly redis: Redis,
    private readonly keys: SessionKeys,
  ) {}

  /** Asks the worker running this session's run to stop it at its next boundary. False when nothing runs. */
  async stop(session: string): Promise<boolean> {
    if (!(await this.running(session))) return false;
    await this.redis.publish(this.keys.cancelChannel, session);
    return true;
  }

  /**
   * A live run owns the session and has not committed yet. Once its reply is committed (the
   * outbox is written) the run is only delivering: nothing is left to stop.
   */
  private async running(session: string): Promise<boolean> {
    const [owner, delivering] = await Promise.all([this.redis.get(this.keys.owner(session)), this.redis.exists(this.keys.outbox(session))]);
    return owner !== null && delivering === 0 && (await this.redis.exists(this.keys.jobLock(owner))) === 1;
  }

  async status(session: string): Promise<SessionStatus> {
    const [running, queued, last] = await Promise.all([
      this.running(session),
      this.redis.llen(this.keys.inbox(session)),
      this.redis.get(this.keys.last(session)),
    ]);
    const status: SessionStatus = { running, queued };
    if (last) status.last = JSON.parse(last) as NonNullable<SessionStatus['last']>;
    return status;
  }
}

export function formatStatus(s: SessionStatus, now = Date.now()): string {
  const parts = [s.running ? 'A run is working on this conversation.' : 'No run is active.'];
  if (s.running) parts.push(`${s.queued} message(s) in its queue, counting the ones being answered.`);
  else if (s.queued > 0) parts.push(`${s.queued} message(s) waiting for a worker.`);
  if (s.last) {
    const ago = Math.max(0, Math.round((now - s.last.at) / 1000));
    parts.push(`Last run: ${s.last.state}${s.last.reason ? ` (${s.last.reason})` : ''}, ${ago} s ago.`);
  }
  return parts.join(' ');
}
