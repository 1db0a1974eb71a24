import { MessageFlags, type ButtonInteraction, type ChatInputCommandInteraction, type Message } from 'discord.js';
import type { Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import { decidedText } from './approval-card.js';
import { parseApprovalCustomId } from './approval-data.js';
import { unknownCommandText } from '../commands.js';
import { replyOf } from '../kit/intake-reply.js';
import { sessionKeyOf } from '../session-key.js';
import type { ChannelApprovals, ChannelDecideResult, ChannelIntake, InboundMessage, OutboundAdapter } from '../types.js';
import { interactionKey, interactionOf, tokenLifeLeftMs } from './ids.js';
import { safeError } from './errors.js';
import { commandSession, normaliseCommand, normaliseMessage, type BotIdentity } from './inbound.js';
import { buttonView, commandView, messageView } from './views.js';
import { cardOf, refusalText } from '../kit/approval-card.js';

export interface HandlerDeps {
  intake: ChannelIntake;
  /** Where an approval button's press is decided. */
  approvals: ChannelApprovals;
  out: OutboundAdapter;
  redis: Redis;
  prefix: string;
  log: Logger;
}

const QUEUE_FAILED = 'Sorry, I could not take this request (the queue is not reachable). Please try again in a moment.';
const DECIDE_FAILED = 'Sorry, I could not record your decision (the queue is not reachable). Please press again in a moment.';

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
      const reply = replyOf(await this.deps.intake.accept(inbound, bot.name));
      if (reply !== undefined) await this.deps.out.post(inbound, reply, 'answer');
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
        case 'help':
        case 'agent':
        case 'memory':
        case 'forget':
        case 'schedules':
        case 'unschedule': {
          const result = await intake.accept(normaliseCommand(view, Date.now()), botName);
          log.info({ session, eventId: view.id, command: view.name, result: result.kind }, 'slash command');
          const reply = replyOf(result);
          return void (await ephemeral(interaction, reply ?? 'Already answered.'));
        }
        default:
          return void (await ephemeral(interaction, unknownCommandText(view.name)));
      }
    } catch (err) {
      log.error({ err: safeError(err), eventId: view.id, command: view.name }, 'slash command failed');
      if (interaction.deferred)
        await interaction.editReply({ content: QUEUE_FAILED, allowedMentions: { parse: [] }, flags: MessageFlags.SuppressEmbeds }).catch(() => undefined);
      else if (!interaction.replied) await ephemeral(interaction, QUEUE_FAILED).catch(() => undefined);
    }
  }

  /**
   * An Approve / Deny press on an approval card, answered within Discord's 3 seconds (deciding
   * is a few Redis calls). Decided: the card is updated in place (UPDATE_MESSAGE) to the decided
   * text without buttons — the same text the resumed run's approvalDecided sets, so the two edits
   * agree whichever lands last (a memory card's Keep / Discard: this update is its only edit, no
   * run resumes). Anyone else, a second press or a stale card: only the presser is told why (an
   * ephemeral reply), and nothing changes.
   */
  async onButton(interaction: ButtonInteraction): Promise<void> {
    const { log, approvals } = this.deps;
    const view = buttonView(interaction);
    const parsed = parseApprovalCustomId(view.customId);
    if (!parsed) return void (await ephemeral(interaction, 'This button is not one of mine.'));
    let result: ChannelDecideResult;
    try {
      result = await approvals.decide(parsed.id, parsed.decision, { platform: 'discord', userId: view.user.id, name: view.user.name, chat: view.channelId });
    } catch (err) {
      log.error({ err: safeError(err), eventId: view.id, approval: parsed.id }, 'could not decide an approval');
      return void (await ephemeral(interaction, DECIDE_FAILED));
    }
    log.info({ eventId: view.id, approval: parsed.id, decision: parsed.decision, by: view.user.id, result: result.kind }, 'discord approval button');
    if (result.kind === 'decided') {
      const { record } = result;
      const outcome = { decision: record.status as 'approved' | 'denied', by: record.by ?? view.user.name, at: record.at ?? Date.now() };
      return void (await interaction.update({
        content: decidedText(cardOf(record), outcome),
        components: [],
        allowedMentions: { parse: [] },
        flags: MessageFlags.SuppressEmbeds,
      }));
    }
    await ephemeral(interaction, refusalText(result));
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
    // Kept for what is left of the token's life (a credential: not a moment longer), so a turn that folds this command into a later one can still point its response at the answer.
    const ref = interactionOf(message);
    const lifeMs = ref ? tokenLifeLeftMs(ref, Date.now()) : 0;
    if (lifeMs > 0) await redis.set(interactionKey(prefix, message.id), JSON.stringify(ref), 'PX', lifeMs);
    const result = await intake.accept(message, botName);
    if (result.kind === 'refused') {
      // Nothing will answer through this interaction: its token (a credential) leaves Redis now.
      await redis.del(interactionKey(prefix, message.id));
      return this.refused(interaction, result.reply);
    }
    if (result.kind === 'command') await out.post(message, result.reply, 'answer');
  }

  /** A refusal is for the person who asked only: the deferred (public) answer goes, an ephemeral one says why. */
  private async refused(interaction: ChatInputCommandInteraction, reply: string | undefined): Promise<void> {
    await interaction.deleteReply().catch((err: unknown) => this.deps.log.warn({ err: safeError(err) }, 'could not remove the deferred answer'));
    if (reply !== undefined) await interaction.followUp({ content: reply, flags: QUIET, allowedMentions: { parse: [] } });
  }
}

/**
 * The gateway's own answers (refusals, command replies, the decided card) never embed links
 * (../link-previews.ts: they are not the model's answers; the card shows a call's arguments).
 */
const QUIET = MessageFlags.Ephemeral | MessageFlags.SuppressEmbeds;

function ephemeral(interaction: ChatInputCommandInteraction | ButtonInteraction, content: string): Promise<unknown> {
  return interaction.reply({ content, flags: QUIET, allowedMentions: { parse: [] } });
}
