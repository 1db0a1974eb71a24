import type { Redis } from 'ioredis';
import type { SessionKeys } from '../queue/keys.js';
import type { LastRun } from '../queue/job-data.js';
import type { ApprovalDesk } from '../approvals/desk.js';
import { toolServerProblems } from '../queue/tool-servers.js';

export interface SessionStatus {
  running: boolean;
  queued: number;
  /** The tool call a parked run waits to have approved. */
  waitingFor?: { tool: string; expiresAt: number };
  /** MCP servers some worker cannot reach (their tools are left out meanwhile). */
  toolServersDown?: string[];
  last?: LastRun;
  /** The agent recorded with the session (AGENTS_CONFIG). */
  agent?: string;
}

/** What /stop and /status do, from any process: they read and signal through Redis only. */
export class SessionControl {
  constructor(
    private readonly redis: Redis,
    private readonly keys: SessionKeys,
    private readonly approvals?: ApprovalDesk,
  ) {}

  /**
   * Asks the worker running this session's run to stop it at its next boundary; a run parked
   * for an approval is woken to end cancelled. False when nothing runs.
   */
  async stop(session: string): Promise<boolean> {
    if (await this.approvals?.cancel(session)) return true;
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
    const [running, queued, last, waiting, down, agent] = await Promise.all([
      this.running(session),
      this.redis.llen(this.keys.inbox(session)),
      this.redis.get(this.keys.last(session)),
      this.approvals?.pendingOf(session),
      toolServerProblems(this.redis, this.keys.prefix),
      this.redis.get(this.keys.agentOf(session)),
    ]);
    const status: SessionStatus = { running: running || !!waiting, queued };
    if (waiting) status.waitingFor = { tool: waiting.tool, expiresAt: waiting.expiresAt };
    if (down.length > 0) status.toolServersDown = down;
    if (last) status.last = JSON.parse(last) as NonNullable<SessionStatus['last']>;
    if (agent) status.agent = agent;
    return status;
  }
}

export function formatStatus(s: SessionStatus, now = Date.now()): string {
  const parts = [
    s.waitingFor
      ? `A run is waiting for approval of ${s.waitingFor.tool} (until ${new Date(s.waitingFor.expiresAt).toISOString().slice(11, 16)} UTC).`
      : s.running
        ? 'A run is working on this conversation.'
        : 'No run is active.',
  ];
  if (s.running) parts.push(`${s.queued} message(s) in its queue, counting the ones being answered.`);
  else if (s.queued > 0) parts.push(`${s.queued} message(s) waiting for a worker.`);
  if (s.last) {
    const ago = Math.max(0, Math.round((now - s.last.at) / 1000));
    parts.push(`Last run: ${s.last.state}${s.last.reason ? ` (${s.last.reason})` : ''}, ${ago} s ago.`);
  }
  if (s.toolServersDown) parts.push(`Tools unavailable: ${s.toolServersDown.join('; ')}.`);
  if (s.agent) parts.push(`Agent: ${s.agent} (/agent tells more).`);
  return parts.join(' ');
}
