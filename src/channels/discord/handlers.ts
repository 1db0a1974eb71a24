import { MessageFlags, type ChatInputCommandInteraction, type Message } from 'discord.js';
import type { Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import { unknownCommandText } from '../commands.js';
import type { Intake } from '../intake.js';
import { sessionKeyOf } from '../session-key.js';
import type { InboundMessage, OutboundAdapter } from '../types.js';
import { INTERACTION_TOKEN_MS, interactionKey, interactionOf } from './ids.js';
import { safeError } from './errors.js';
import { commandSession, normaliseCommand, normaliseMessage, type BotIdentity } from './inbound.js';
import { commandView, messageView } from './views.js';

export interface HandlerDeps {
  intake: Intake;
  out: OutboundAdapter;
  redis: Redis;
  prefix: string;
  log: Logger;
}

const QUEUE_FAILED = 'Sorry, I could not take this request (the queue is not reachable). Please try again in a moment.';

/**
 * Discord events → the intake. Acknowledges at once and never waits for a run: a message is
 * enqueued, a slash command is deferred first (Discord's 3-second deadline) and then enqueued.
 */
export class DiscordHandlers {
  constructor(private readonly deps: HandlerDeps) {}

  async onMessage(message: Message, bot: BotIdentity & { name: string }): Promise<void> {
    const { log } = this.deps;
    const gate = normaliseMessage(messageView(message), bot, Date.now());
    if (!gate.ok) {
      log.debug({ eventId: message.id, reason: gate.reason }, 'message ignored');
      return;
    }
    const inbound = gate.message;
    log.debug({ eventId: inbound.eventId, text: inbound.text }, 'message text');
    try {
      const result = await this.deps.intake.accept(inbound, bot.name);
      if (result.kind === 'command') await this.deps.out.post(inbound, result.reply, 'answer');
    } catch (err) {
      log.error({ err: safeError(err), eventId: inbound.eventId }, 'could not take a Discord message');
      await this.deps.out.post(inbound, QUEUE_FAILED, 'notice').catch((e: unknown) => log.warn({ err: safeError(e) }, 'could not tell the user'));
    }
  }

  async onCommand(interaction: ChatInputCommandInteraction, botName: string): Promise<void> {
    const { log, intake } = this.deps;
    const view = commandView(interaction);
    const session = sessionKeyOf(commandSession(view));
    try {
      switch (view.name) {
        case 'ask':
        case 'reset':
          if (view.name === 'ask' && !view.prompt?.trim()) return void (await ephemeral(interaction, 'Tell me what to do: /ask prompt:<your request>'));
          return await this.enqueue(interaction, normaliseCommand(view, Date.now()), botName);
        case 'stop':
        case 'status':
        case 'help': {
          const { reply } = await intake.command(view.name, session);
          log.info({ session, eventId: view.id, command: view.name }, 'slash command');
          return void (await ephemeral(interaction, reply));
        }
        default:
          return void (await ephemeral(interaction, unknownCommandText(view.name)));
      }
    } catch (err) {
      log.error({ err: safeError(err), eventId: view.id, command: view.name }, 'slash command failed');
      if (interaction.deferred) await interaction.editReply({ content: QUEUE_FAILED, allowedMentions: { parse: [] } }).catch(() => undefined);
      else if (!interaction.replied) await ephemeral(interaction, QUEUE_FAILED).catch(() => undefined);
    }
  }

  /** Defer first (the enqueue may be slow, the deadline is 3 s), then queue. The worker answers through the interaction. */
  private async enqueue(interaction: ChatInputCommandInteraction, message: InboundMessage, botName: string): Promise<void> {
    const { log, redis, prefix, intake, out } = this.deps;
    try {
      await interaction.deferReply();
    } catch (err) {
      // The answer still arrives: past a dead interaction it goes to the channel.
      log.warn({ err: safeError(err), eventId: message.eventId }, 'could not defer the slash command');
    }
    log.debug({ eventId: message.eventId, text: message.text }, 'slash command text');
    // Kept for the token's life, so a turn that folds this command into a later one can still point its response at the answer.
    await redis.set(interactionKey(prefix, message.id), JSON.stringify(interactionOf(message)), 'PX', INTERACTION_TOKEN_MS);
    const result = await intake.accept(message, botName);
    if (result.kind === 'command') await out.post(message, result.reply, 'answer');
  }
}

function ephemeral(interaction: ChatInputCommandInteraction, content: string): Promise<unknown> {
  return interaction.reply({ content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
}
