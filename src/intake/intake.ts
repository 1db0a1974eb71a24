import type { Redis } from 'ioredis';
import type { AccessGate } from '../access/gate.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Producer } from '../queue/producer.js';
import { formatStatus, type SessionControl } from '../session/control.js';
import { RedisKeys } from '../queue/keys.js';
import { helpText, parseCommand, unknownCommandText, type CommandName } from '../channels/commands.js';
import { sessionKeyOf } from '../channels/session-key.js';
import type { ChannelIntake, InboundMessage, IntakeResult } from '../channels/types.js';
import type { ScheduleBook } from '../schedules/schedule-book.js';
import { scheduleList } from '../schedules/describe.js';
import type { AgentCommand } from './agent-command.js';
import type { MemoryCommand } from './memory-command.js';

export interface IntakeOptions {
  /** Access control and the per-user rate limit; absent: everyone may talk (the terminal chat). */
  gate?: AccessGate;
  /** Remembers events answered at once, so a redelivery is not answered (or acted on) twice. */
  answered?: { redis: Redis; prefix: string };
  /** SESSION_QUEUE_MAX for platform channels (the terminal chat has no cap). */
  queueMax?: number;
  /** /schedules and /unschedule; APPROVERS may also remove others' schedules in a group. */
  schedules?: { book: ScheduleBook; approvers: readonly string[] };
  /** /agent's answer (absent: the command says agents are not described here). */
  agents?: AgentCommand;
  /** /memory and /forget (absent: memory is not available here). */
  memory?: MemoryCommand;
  metrics?: Metrics;
}

/** As long as the producer remembers queued events. */
const ANSWERED_TTL_SECONDS = 24 * 3600;

/**
 * Where every channel hands a normalised message: access control first, then chat commands that
 * act at once (/stop, /status, /help, unknown ones) are answered here; /reset and everything
 * else go to the session's inbox, in order. Anything answered at once is answered once per
 * platform event, however often the platform delivers it.
 */
export class Intake implements ChannelIntake {
  private readonly metrics: Metrics | undefined;

  constructor(
    private readonly producer: Producer,
    private readonly control: SessionControl,
    private readonly log: Logger,
    private readonly options: IntakeOptions = {},
  ) {
    this.metrics = options.metrics;
  }

  /** `botName` lets a group command addressed to another bot (`/stop@other`) pass as plain text. */
  async accept(message: InboundMessage, botName?: string): Promise<IntakeResult> {
    const session = sessionKeyOf(message);
    const command = parseCommand(message.text, botName);
    const commandName = command === null ? undefined : 'unknown' in command ? 'unknown' : command.name;
    const verdict = this.options.gate ? await this.options.gate.check(message, commandName) : { pass: true as const };
    if (!verdict.pass) {
      if (verdict.reply !== undefined && !(await this.firstAnswer(message))) return { kind: 'duplicate', session };
      return { kind: 'refused', session, reason: verdict.reason, ...(verdict.reply !== undefined && { reply: verdict.reply }) };
    }
    if (command && 'unknown' in command) {
      if (!(await this.firstAnswer(message))) return { kind: 'duplicate', session };
      this.metrics?.commands.inc({ platform: message.platform, command: 'unknown' });
      return { kind: 'command', session, name: 'unknown', reply: unknownCommandText(command.unknown), ok: false };
    }
    if (command && command.name !== 'reset') {
      if (!(await this.firstAnswer(message))) return { kind: 'duplicate', session };
      this.metrics?.commands.inc({ platform: message.platform, command: command.name });
      return { kind: 'command', session, name: command.name, ...(await this.command(command.name, session, message, command.args)) };
    }
    const queued = command?.name === 'reset' ? { ...message, command: 'reset' as const } : message;
    const max = message.platform === 'terminal' ? 0 : (this.options.queueMax ?? 0);
    const result = await this.producer.enqueue(queued, max);
    this.log.info({ platform: message.platform, session, eventId: message.eventId, status: result.status }, 'inbound message');
    if (result.status === 'full') return this.queueFull(message, session, max);
    (result.status === 'queued' ? this.metrics?.inbound : this.metrics?.deduplicated)?.inc({ platform: message.platform });
    return result.status === 'queued' ? { kind: 'queued', session } : { kind: 'duplicate', session };
  }

  private async command(name: Exclude<CommandName, 'reset'>, session: string, message: InboundMessage, args: string): Promise<{ reply: string; ok: boolean }> {
    switch (name) {
      case 'schedules':
      case 'unschedule':
        return this.scheduleCommand(name, session, message, args);
      case 'help':
        return { reply: helpText(), ok: true };
      case 'memory':
        return this.options.memory
          ? { reply: await this.options.memory.memory(session, message), ok: true }
          : { reply: 'Memory is not available here.', ok: false };
      case 'forget':
        return this.options.memory ? this.options.memory.forget(session, message, args) : { reply: 'Memory is not available here.', ok: false };
      case 'agent':
        return this.options.agents
          ? { reply: await this.options.agents.reply(session, message), ok: true }
          : { reply: 'This process does not know the agents.', ok: false };
      case 'status':
        return { reply: formatStatus(await this.control.status(session)), ok: true };
      case 'stop': {
        const stopped = await this.control.stop(session);
        this.log.info({ session, stopped }, 'stop requested');
        return { reply: stopped ? 'Stopping the current run…' : 'Nothing is running.', ok: true };
      }
    }
  }

  private async scheduleCommand(
    name: 'schedules' | 'unschedule',
    session: string,
    message: InboundMessage,
    args: string,
  ): Promise<{ reply: string; ok: boolean }> {
    const schedules = this.options.schedules;
    if (!schedules) return { reply: 'Schedules are not available here.', ok: false };
    if (name === 'schedules') return { reply: scheduleList(await schedules.book.ofSession(session)), ok: true };
    const id = args.split(/\s+/)[0] ?? '';
    if (id === '') return { reply: 'Which one? /unschedule <id> — /schedules lists the ids.', ok: false };
    const result = await schedules.book.cancel(id, message, schedules.approvers);
    this.log.info({ session, scheduleId: id, by: message.sender.id, outcome: result.outcome }, 'unschedule');
    if (result.outcome === 'not_found')
      return { reply: `No schedule "${id}" in this conversation. /schedules lists them (a thread's schedules are listed in that thread).`, ok: false };
    if (result.outcome === 'not_yours')
      return {
        reply: `Schedule ${id} was made by ${result.schedule?.origin.sender.name ?? 'someone else'}; only they (or an approver) can remove it.`,
        ok: false,
      };
    return { reply: `Removed ${id} "${result.schedule!.name}": it will not fire again.`, ok: true };
  }

  private async queueFull(message: InboundMessage, session: string, max: number): Promise<IntakeResult> {
    this.log.warn({ platform: message.platform, userId: message.sender.id, session, eventId: message.eventId, reason: 'queue_full', max }, 'message refused');
    this.metrics?.refusals.inc({ platform: message.platform, reason: 'queue_full' });
    if (!(await this.firstAnswer(message))) return { kind: 'duplicate', session };
    const reply = `Sorry, ${max} messages are already waiting in this conversation, so I did not take this one. Please send it again once I have answered those (or /stop the current run).`;
    return { kind: 'refused', session, reason: 'queue_full', reply };
  }

  /**
   * True the first time this event is answered at once; false for a redelivery of it. Public for
   * a channel's own at-once answers (Telegram's "file too large"), so every one is kept in one place.
   */
  async firstAnswer(message: Pick<InboundMessage, 'platform' | 'eventId'>): Promise<boolean> {
    const answered = this.options.answered;
    if (!answered) return true;
    const key = new RedisKeys(answered.prefix).answered(message.platform, message.eventId);
    return (await answered.redis.set(key, '1', 'EX', ANSWERED_TTL_SECONDS, 'NX')) === 'OK';
  }
}
