import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Producer } from '../queue/producer.js';
import { formatStatus, type SessionControl } from '../queue/control.js';
import { helpText, parseCommand, unknownCommandText, type CommandName } from './commands.js';
import { sessionKeyOf } from './session-key.js';
import type { InboundMessage } from './types.js';

export type IntakeResult =
  | { kind: 'queued'; session: string }
  | { kind: 'duplicate'; session: string }
  /** A command answered at once; the channel shows `reply` the way its platform answers commands. */
  | { kind: 'command'; session: string; name: CommandName | 'unknown'; reply: string; ok: boolean };

/**
 * Where every channel hands a normalised message: chat commands that act at once (/stop,
 * /status, /help, unknown ones) are answered here; /reset and everything else go to the
 * session's inbox, in order.
 */
export class Intake {
  constructor(
    private readonly producer: Producer,
    private readonly control: SessionControl,
    private readonly log: Logger,
    private readonly metrics?: Metrics,
  ) {}

  /** `botName` lets a group command addressed to another bot (`/stop@other`) pass as plain text. */
  async accept(message: InboundMessage, botName?: string): Promise<IntakeResult> {
    const session = sessionKeyOf(message);
    const command = parseCommand(message.text, botName);
    if (command && 'unknown' in command) {
      this.metrics?.commands.inc({ platform: message.platform, command: 'unknown' });
      return { kind: 'command', session, name: 'unknown', reply: unknownCommandText(command.unknown), ok: false };
    }
    if (command && command.name !== 'reset') {
      this.metrics?.commands.inc({ platform: message.platform, command: command.name });
      return { kind: 'command', session, name: command.name, ...(await this.command(command.name, session)) };
    }
    const queued = command?.name === 'reset' ? { ...message, command: 'reset' as const } : message;
    const result = await this.producer.enqueue(queued);
    this.log.info({ platform: message.platform, session, eventId: message.eventId, status: result.status }, 'inbound message');
    (result.status === 'queued' ? this.metrics?.inbound : this.metrics?.deduplicated)?.inc({ platform: message.platform });
    return result.status === 'queued' ? { kind: 'queued', session } : { kind: 'duplicate', session };
  }

  /** A command that acts at once, for surfaces that deliver commands apart from messages (Discord slash commands). */
  async command(name: Exclude<CommandName, 'reset'>, session: string): Promise<{ reply: string; ok: boolean }> {
    switch (name) {
      case 'help':
        return { reply: helpText(), ok: true };
      case 'status':
        return { reply: formatStatus(await this.control.status(session)), ok: true };
      case 'stop': {
        const stopped = await this.control.stop(session);
        this.log.info({ session, stopped }, 'stop requested');
        return { reply: stopped ? 'Stopping the current run…' : 'Nothing is running.', ok: true };
      }
    }
  }
}
