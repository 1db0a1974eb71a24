import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import type { Redis } from 'ioredis';
import { Bot } from 'grammy';
import type { BotCommand, CallbackQuery, Message, Update } from 'grammy/types';
import { parseApprovalData } from './approval-data.js';
import { telegramMessageSchema } from './update-schema.js';
import { malformed } from '../kit/payload.js';
import { decidedAnswer, refusalText, settledMemoryCard } from '../kit/approval-card.js';
import type { Logger } from '../../log.js';
import { replyOf } from '../kit/intake-reply.js';
import { COMMANDS } from '../commands.js';
import type { ChannelApprovals, ChannelDecideResult, ChannelHealth, ChannelIntake, InboundMessage } from '../types.js';
import { CLOUD_DOWNLOAD_LIMIT } from './download.js';
import { describeTelegramError, grammySignal, redactNetworkErrors, withTelegramRetries } from './errors.js';
import { sleep } from '../../lib/sleep.js';
import { RedisKeys } from '../../queue/keys.js';
import { botIdOf } from './ids.js';
import { ASK_COMMAND, normaliseMessage, type BotIdentity } from './inbound.js';
import { PollingLease } from './lease.js';
import type { TelegramOutbound } from './outbound.js';
import { Poller, type PollerOptions } from './polling.js';
import { mountWebhook, webhookPath, webhookSecretFor } from './webhook.js';

export interface TelegramSettings {
  token: string;
  apiRoot: string | undefined;
  webhookUrl: string | undefined;
  webhookSecret: string | undefined;
}

/** What the Telegram gateway half uses of the gateway (a narrow view of its GatewayContext). */
export interface TelegramGatewayDeps {
  settings: TelegramSettings;
  attachmentMaxBytes: number;
  intake: ChannelIntake;
  approvals: ChannelApprovals;
  app: Express;
  redis: Redis;
  prefix: string;
  log: Logger;
  /** Answers commands and refusals; the same adapter the worker uses. */
  outbound: TelegramOutbound;
  /** Test seams for the poller's waits. */
  polling?: Partial<Pick<PollerOptions, 'pollTimeoutSec' | 'conflictBackoffMs' | 'conflictMaxMs' | 'errorBackoffMs' | 'standbyRetryMs'>> & {
    leaseTtlMs?: number;
  };
}

/** New messages (edits never start a second run) and presses of approval buttons. */
const ALLOWED_UPDATES = ['message', 'callback_query'] as const;

export const BOT_COMMANDS: BotCommand[] = [
  { command: ASK_COMMAND, description: 'ask me something (in a group: /ask@thisbot your question)' },
  ...Object.entries(COMMANDS).map(([command, description]) => ({ command, description })),
];

/**
 * The gateway half: a grammY Bot fed by long polling (default) or by the webhook route
 * (TELEGRAM_WEBHOOK_URL). Every update goes through `handleUpdate`: normalised, then handed to
 * the intake (which queues it) or answered at once (commands, refusals). Nothing here waits for
 * a run. Start-up (getMe, setMyCommands, setWebhook) runs in the background and is retried, so a
 * Telegram outage at boot shows in readiness instead of stopping the gateway.
 */
export class TelegramChannel {
  readonly name = 'telegram';
  private readonly bot: Bot;
  private readonly log: Logger;
  private me: BotIdentity | undefined;
  private poller: Poller | undefined;
  private lastEventAt: number | undefined;
  private status: { connected: boolean; detail?: string } = { connected: false, detail: 'not started' };
  private stopping = new AbortController();
  private starting: Promise<void> | undefined;
  private readonly replies = new Set<Promise<void>>();

  constructor(private readonly deps: TelegramGatewayDeps) {
    const { settings } = deps;
    this.log = deps.log;
    this.bot = new Bot(settings.token, { client: { ...(settings.apiRoot && { apiRoot: settings.apiRoot }) } });
    this.bot.api.config.use(redactNetworkErrors);
    this.bot.on('message', (ctx) => this.onMessage(ctx.message, ctx.update.update_id));
    this.bot.on('callback_query:data', (ctx) => this.onButton(ctx.callbackQuery));
    if (settings.webhookUrl) {
      // Mounted now: the gateway adds routes before it listens, and starts channels after.
      const secret = webhookSecretFor(settings.token, settings.webhookSecret);
      mountWebhook(deps.app, webhookPath(settings.webhookUrl), secret, (u) => this.handleUpdate(u), this.log);
    }
  }

  start(): Promise<void> {
    this.stopping = new AbortController();
    this.status = { connected: false, detail: 'connecting to Telegram (getMe)' };
    this.starting = this.connect().catch((err: unknown) => {
      if (this.stopping.signal.aborted) return;
      this.log.error({ error: describeTelegramError(err) }, 'telegram channel failed to start');
      this.status = { connected: false, detail: `failed to start: ${describeTelegramError(err)}` };
    });
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.poller?.stop();
    await this.starting;
    await Promise.allSettled([...this.replies]);
    this.status = { connected: false, detail: 'stopped' };
  }

  health(): ChannelHealth {
    const base = this.poller && this.me ? this.poller.state : this.status;
    return { ...base, ...(this.lastEventAt !== undefined && { lastEventAt: this.lastEventAt }) };
  }

  /** One update from the poller or the webhook. Resolves once it is queued (or answered); throws when it could not be. */
  async handleUpdate(update: Update): Promise<void> {
    if (!this.me) throw new Error('the Telegram channel is still starting');
    this.lastEventAt = Date.now();
    await this.bot.handleUpdate(update).catch((err: unknown) => {
      throw (err as { error?: unknown }).error ?? err;
    });
  }

  private async connect(): Promise<void> {
    const { settings } = this.deps;
    const signal = this.stopping.signal;
    while (!this.bot.isInited()) {
      try {
        await this.bot.init(grammySignal(signal));
      } catch (err) {
        if (signal.aborted) return;
        this.log.error({ error: describeTelegramError(err) }, 'telegram getMe failed (check TELEGRAM_BOT_TOKEN and TELEGRAM_API_ROOT); retrying in 60 s');
        this.status = { connected: false, detail: `getMe failed: ${describeTelegramError(err)}` };
        await sleep(60_000, signal);
      }
    }
    if (signal.aborted) return;
    const info = this.bot.botInfo;
    this.me = { id: info.id, username: info.username };
    this.log.info({ bot: `@${info.username}`, mode: settings.webhookUrl ? 'webhook' : 'polling' }, 'telegram bot identified');
    await withTelegramRetries(() => this.bot.api.setMyCommands(BOT_COMMANDS), { idempotent: true, signal }).catch((err: unknown) =>
      this.log.warn({ error: describeTelegramError(err) }, 'could not register the telegram commands (setMyCommands)'),
    );
    if (settings.webhookUrl) return this.registerWebhook(settings.webhookUrl, signal);
    const p = this.deps.polling ?? {};
    this.poller = new Poller({
      api: this.bot.api,
      handle: (u) => this.handleUpdate(u),
      log: this.log,
      lease: new PollingLease(
        this.deps.redis,
        new RedisKeys(this.deps.prefix).telegramPoller(botIdOf(settings.token)),
        `${process.pid}-${randomUUID()}`,
        p.leaseTtlMs ?? 30_000,
      ),
      allowedUpdates: ALLOWED_UPDATES,
      ...p,
    });
    if (!signal.aborted) this.poller.start();
  }

  private async registerWebhook(url: string, signal: AbortSignal): Promise<void> {
    const { settings } = this.deps;
    for (;;) {
      try {
        await withTelegramRetries(
          () => this.bot.api.setWebhook(url, { secret_token: webhookSecretFor(settings.token, settings.webhookSecret), allowed_updates: [...ALLOWED_UPDATES] }),
          { idempotent: true, signal },
        );
        this.status = { connected: true };
        this.log.info({ url }, 'telegram webhook registered');
        return;
      } catch (err) {
        if (signal.aborted) return;
        this.status = { connected: false, detail: `setWebhook failed: ${describeTelegramError(err)}` };
        this.log.error({ error: describeTelegramError(err) }, 'telegram setWebhook failed; retrying in 60 s');
        await sleep(60_000, signal);
      }
    }
  }

  private async onMessage(msg: Message, updateId: number): Promise<void> {
    const me = this.me!;
    const problem = malformed(telegramMessageSchema, msg);
    if (problem !== undefined) {
      this.log.warn({ updateId, problem }, 'telegram update skipped: the message is malformed');
      return;
    }
    const cap = this.deps.settings.apiRoot ? this.deps.attachmentMaxBytes : Math.min(this.deps.attachmentMaxBytes, CLOUD_DOWNLOAD_LIMIT);
    const n = normaliseMessage(msg, { me, maxBytes: cap, now: Date.now(), newId: randomUUID });
    if (n.kind === 'ignore') {
      this.log.debug({ updateId, chat: msg.chat.id, reason: n.reason }, 'telegram message ignored');
      return;
    }
    const { message } = n;
    if (n.kind === 'refuse') {
      this.log.info({ updateId, eventId: message.eventId, reason: n.reason }, 'telegram message refused');
      if (await this.deps.intake.firstAnswer(message)) this.reply(message, n.reply);
      return;
    }
    this.log.debug({ updateId, eventId: message.eventId, trigger: n.trigger, text: message.text }, 'telegram message');
    const reply = replyOf(await this.deps.intake.accept(message, me.username));
    if (reply !== undefined) this.reply(message, reply);
  }

  /**
   * An Approve / Deny press: decided once, by the person who asked or an approver; anyone else,
   * or a second press, is told so privately (the callback answer) and nothing changes. The run
   * shows the decision on the card when it resumes; a memory card's Keep / Discard (no run
   * resumes) is shown on it from here, after the answer.
   */
  private async onButton(query: CallbackQuery): Promise<void> {
    const parsed = parseApprovalData(query.data ?? '');
    if (!parsed) return void (await this.answerButton(query.id, 'This button is not one of mine.'));
    const name = query.from.username ? `@${query.from.username}` : query.from.first_name;
    const result = await this.deps.approvals.decide(parsed.id, parsed.decision, {
      platform: 'telegram',
      userId: String(query.from.id),
      name,
      chat: String(query.message?.chat.id ?? ''),
    });
    this.log.info({ approval: parsed.id, decision: parsed.decision, by: query.from.id, result: result.kind }, 'telegram approval button');
    await this.answerButton(query.id, buttonAnswer(result));
    const chat = query.message?.chat.id;
    const settled =
      chat === undefined ? undefined : settledMemoryCard(result, { platform: 'telegram', conversation: String(chat) }, idOf(query.message?.message_id));
    if (settled)
      this.detached(
        this.deps.outbound.approvalDecided(settled.to, settled.messageId, settled.card, settled.outcome),
        'could not show the decision on a memory card',
      );
  }

  private async answerButton(queryId: string, text: string): Promise<void> {
    await withTelegramRetries(() => this.bot.api.answerCallbackQuery(queryId, { text }), { idempotent: true, maxWaitMs: 2_000 }).catch((err: unknown) =>
      this.log.warn({ error: describeTelegramError(err) }, 'could not answer the button press'),
    );
  }

  /** Answers at once, after the update is acknowledged: the reply never delays the hand-over. */
  private reply(to: InboundMessage, text: string): void {
    this.detached(this.deps.outbound.post(to, text, 'answer'), 'telegram command reply failed', to.eventId);
  }

  /** A write that never holds the update (paced, it may wait): awaited on stop, a failure logged. */
  private detached(write: Promise<unknown>, failure: string, eventId?: string): void {
    const sent: Promise<void> = write
      .then(() => undefined)
      .catch((err: unknown) => this.log.warn({ ...(eventId !== undefined && { eventId }), error: describeTelegramError(err) }, failure))
      .finally(() => this.replies.delete(sent));
    this.replies.add(sent);
  }
}

/** What the person who pressed a button reads (only they see it). */
function buttonAnswer(result: ChannelDecideResult): string {
  return result.kind === 'decided' ? decidedAnswer(result.record) : refusalText(result);
}

const idOf = (messageId: number | undefined) => (messageId === undefined ? undefined : String(messageId));
