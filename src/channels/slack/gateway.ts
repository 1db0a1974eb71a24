import { App, type AuthorizeResult, type Receiver } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import { settledMemoryCard } from '../kit/approval-card.js';
import { replyOf } from '../kit/intake-reply.js';
import type { ChannelHealth, GatewayContext, InboundMessage } from '../types.js';
import { apiBase, createWebClient, slackCall } from './api.js';
import { SlackRefused } from './errors.js';
import { APPROVAL_ACTION_IDS } from './approval-data.js';
import { decideClick, type SlackBlockActions, type SlackButtonAction } from './approvals.js';
import { engagedThreadKey } from './ids.js';
import { askToInbound, classifyEvent, parseAsk, toInbound, type SlackCommandPayload, type SlackMessageEvent } from './inbound.js';
import { SlackOutbound } from './outbound.js';
import { slackCommandSchema, slackMessageEventSchema } from './payload-schema.js';
import { malformed } from '../kit/payload.js';
import { slackLogger } from './logger.js';
import { chooseTransport, DeferredAckSocketReceiver, httpReceiver, type Transport } from './transport.js';

export const ASK_COMMAND = '/ask';
const ASK_USAGE = 'Usage: `/ask your question` — or `/ask help`, `/ask status`, `/ask stop`, `/ask reset`, `/ask schedules`, `/ask unschedule <id>`.';
const IDENTITY_RETRY_MS = [1_000, 5_000, 15_000, 60_000];

interface Identity {
  userId: string;
  botId: string | undefined;
  team: string | undefined;
  /** The installing workspace: its members are vouched for in its channels (access/policy.ts). */
  teamId: string | undefined;
}

/**
 * Slack's inbound half in the gateway: a Bolt app on the Events API (the gateway's Express app,
 * POST /slack/events) or Socket Mode, turning mentions, DMs, thread follow-ups and /ask into
 * normalised messages for the intake. It acknowledges as soon as a message is enqueued and
 * never waits for a run.
 */
export class SlackGateway {
  readonly name = 'slack';
  readonly transport: Transport;
  private readonly app: App;
  private readonly receiver: Receiver;
  private readonly api: WebClient;
  private readonly outbound: SlackOutbound;
  private identity: Identity | undefined;
  private identityTimer: NodeJS.Timeout | undefined;
  private socket: { connected: boolean; detail?: string } = { connected: false, detail: 'Socket Mode not started' };
  private identityProblem = 'auth.test not done yet';
  private lastEventAt: number | undefined;
  private stopped = false;
  /** Private answers to clicks still being posted (awaited on stop). */
  private readonly answering = new Set<Promise<void>>();

  constructor(private readonly ctx: GatewayContext) {
    const slack = ctx.config.channels.slack;
    if (!slack) throw new Error('the slack channel needs SLACK_BOT_TOKEN');
    this.transport = chooseTransport(slack);
    this.api = createWebClient(slack.botToken, slack.apiUrl, slackLogger(ctx.log));
    this.outbound = new SlackOutbound({
      token: slack.botToken,
      apiUrl: slack.apiUrl,
      redis: ctx.redis,
      prefix: ctx.prefix,
      log: ctx.log,
      linkPreviews: ctx.config.linkPreviews,
    });
    if (this.transport === 'socket') {
      this.receiver = new DeferredAckSocketReceiver(slack.appToken!, slack.apiUrl, ctx.log, (state, detail) => {
        this.socket = { connected: state === 'connected', ...(detail && { detail }) };
        ctx.log.info({ state }, 'socket mode state');
      });
    } else {
      if (!slack.signingSecret) throw new Error('the slack channel needs SLACK_SIGNING_SECRET for HTTP events');
      this.receiver = httpReceiver(ctx.app, slack.signingSecret, ctx.log);
    }
    this.app = new App({
      receiver: this.receiver,
      // Our own authorize: no auth.test on the event path, so an event is never dropped because Slack's API was briefly unreachable.
      authorize: async (_source, body) => this.authorization(body),
      logger: slackLogger(ctx.log),
      convoStore: false,
      clientOptions: { slackApiUrl: apiBase(slack.apiUrl), retryConfig: { retries: 0 }, rejectRateLimitedCalls: true },
    });
    this.app.event('app_mention', async ({ event, context }) => this.onMessage(event as unknown as SlackMessageEvent, context.retryNum, context.teamId));
    this.app.event('message', async ({ event, context }) => this.onMessage(event as unknown as SlackMessageEvent, context.retryNum, context.teamId));
    this.app.command(ASK_COMMAND, async ({ command, ack }) => {
      const text = await this.onAsk(command as SlackCommandPayload);
      await ack({ response_type: 'ephemeral', text });
    });
    // Approval cards' buttons (HTTP: interactivity posts to the same /slack/events; Socket Mode: `interactive` envelopes).
    this.app.action({ type: 'block_actions', action_id: APPROVAL_ACTION_IDS }, async ({ ack, body, action }) => {
      await ack();
      await this.onApprovalClick(body as unknown as SlackBlockActions, action as unknown as SlackButtonAction);
    });
    this.app.error(async (err) => {
      ctx.log.error({ err }, 'slack event not handled');
      // Rethrown: HTTP answers 500 and Socket Mode does not ack, so Slack delivers the event again.
      throw err;
    });
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.resolveIdentity(0);
    if (this.transport === 'socket') {
      this.socket = { connected: false, detail: 'Socket Mode connecting' };
      // Not awaited: the socket client retries apps.connections.open for a long time; readiness shows how it goes.
      this.receiver.start().catch((err: unknown) => {
        this.socket = { connected: false, detail: `Socket Mode failed: ${err instanceof Error ? err.message : String(err)}` };
        this.ctx.log.error({ err }, 'socket mode did not start');
      });
    }
    this.ctx.log.info({ transport: this.transport, bot: this.identity?.userId }, 'slack channel started');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.identityTimer);
    if (this.transport === 'socket') await this.receiver.stop().catch((err: unknown) => this.ctx.log.warn({ err }, 'socket mode stop failed'));
    await Promise.allSettled([...this.answering]);
  }

  health(): ChannelHealth {
    const base = this.lastEventAt !== undefined ? { lastEventAt: this.lastEventAt } : {};
    if (!this.identity) return { connected: false, detail: this.identityProblem, ...base };
    if (this.transport === 'socket' && !this.socket.connected) return { connected: false, detail: this.socket.detail ?? 'Socket Mode not connected', ...base };
    return { connected: true, ...base };
  }

  private authorization(body: unknown): AuthorizeResult {
    const fromEvent = (body as { authorizations?: { user_id?: string }[] }).authorizations?.[0]?.user_id;
    const userId = this.identity?.userId ?? fromEvent;
    return {
      botToken: this.ctx.config.channels.slack!.botToken,
      ...(userId && { botUserId: userId }),
      ...(this.identity?.botId && { botId: this.identity.botId }),
    };
  }

  /** auth.test: who the bot is (to strip its mention and ignore its own messages) and whether the token works. */
  private async resolveIdentity(attempt: number): Promise<void> {
    try {
      const res = await slackCall('auth.test', () => this.api.auth.test(), { idempotent: true, attempts: 1 });
      if (!res.user_id) throw new SlackRefused('auth.test', 'no_user_id');
      this.identity = { userId: res.user_id, botId: res.bot_id, team: res.team, teamId: res.team_id };
      this.ctx.log.info({ bot: res.user_id, team: res.team }, 'slack bot identified');
    } catch (err) {
      const code = err instanceof SlackRefused ? err.code : err instanceof Error ? err.message : String(err);
      this.identityProblem = `auth.test failed: ${code}${err instanceof SlackRefused && /auth|token|account/.test(code) ? ' (check SLACK_BOT_TOKEN)' : ''}`;
      this.ctx.log.error({ err }, 'slack auth.test failed');
      if (this.stopped) return;
      const delay = IDENTITY_RETRY_MS[Math.min(attempt, IDENTITY_RETRY_MS.length - 1)]!;
      this.identityTimer = setTimeout(() => void this.resolveIdentity(attempt + 1), delay);
      this.identityTimer.unref();
    }
  }

  /** The installing workspace: auth.test's answer, else the team the event was delivered for. */
  private homeTeam(eventTeam?: string): string | undefined {
    return this.identity?.teamId ?? eventTeam;
  }

  private async onMessage(event: SlackMessageEvent, retryNum: number | undefined, eventTeam?: string): Promise<void> {
    this.lastEventAt = Date.now();
    const problem = malformed(slackMessageEventSchema, event);
    if (problem !== undefined) return this.ctx.log.warn({ problem, retryNum }, 'slack event skipped: it is malformed');
    const log = this.ctx.log.child({ eventType: event.type, channel: event.channel, ts: event.ts, ...(retryNum !== undefined && { retryNum }) });
    const botUserId = this.identity?.userId;
    const trigger = classifyEvent(event, botUserId);
    if (trigger.kind === 'ignore') return log.debug({ reason: trigger.reason }, 'slack event ignored');
    if (trigger.kind === 'thread_reply') {
      const followups = this.ctx.config.channels.slack!.threadFollowups;
      const engaged = followups && (await this.ctx.redis.exists(engagedThreadKey(this.ctx.prefix, event.channel, event.thread_ts!))) === 1;
      if (!engaged) return log.debug({ reason: followups ? 'thread not answered by the bot' : 'mention required' }, 'slack event ignored');
    }
    const message = toInbound(event, botUserId, Date.now(), this.homeTeam(eventTeam));
    if (!message) return log.debug({ reason: 'empty' }, 'slack event ignored');
    log.debug({ text: message.text }, 'slack message');
    const result = await this.ctx.intake.accept(message);
    log.info({ eventId: message.eventId, session: result.session, trigger: trigger.kind, result: result.kind }, 'slack event');
    const reply = replyOf(result);
    if (reply !== undefined) this.replyDetached(message, reply);
  }

  /** /ask: the text of the ephemeral acknowledgement. */
  private async onAsk(payload: SlackCommandPayload): Promise<string> {
    this.lastEventAt = Date.now();
    const problem = malformed(slackCommandSchema, payload);
    if (problem !== undefined) {
      this.ctx.log.warn({ problem }, 'slack command skipped: it is malformed');
      return ASK_USAGE;
    }
    const request = parseAsk(payload.text);
    const log = this.ctx.log.child({ command: ASK_COMMAND, channel: payload.channel_id });
    log.info({ request: request.kind === 'command' ? request.name : request.kind }, 'slack command');
    if (request.kind === 'usage') return ASK_USAGE;
    // `/ask stop` is the chat command /stop: the intake checks access, then acts or queues it like any message.
    const text = request.kind === 'command' ? `/${request.name}${request.args ? ` ${request.args}` : ''}` : payload.text.trim();
    const result = await this.ctx.intake.accept(askToInbound(payload, text, Date.now(), this.homeTeam()));
    log.info({ session: result.session, result: result.kind }, 'slack command taken');
    const reply = replyOf(result);
    if (reply !== undefined) return reply;
    if (result.kind === 'duplicate') return 'Already received.';
    return request.kind === 'command' ? 'Resetting this conversation…' : 'Working on it — the answer will appear here.';
  }

  /**
   * An Approve / Deny click, after the ack (Slack wants it within 3 s): decided through the
   * approval desk; a clicker who may not decide, a second click or a card nobody waits for gets a
   * private answer (chat.postEphemeral in the card's thread), posted without holding the request.
   * A memory card's Keep / Discard (no run resumes for it) is shown on the card from here.
   * A Redis failure throws: the click is not acknowledged over HTTP (500) and Slack shows an error.
   */
  private async onApprovalClick(body: SlackBlockActions, action: SlackButtonAction): Promise<void> {
    this.lastEventAt = Date.now();
    const outcome = await decideClick(this.ctx.approvals, body, action, this.homeTeam());
    const log = this.ctx.log.child({ channel: outcome.channel, user: body.user.id, action: action.action_id });
    log.info({ value: action.value, result: outcome.result?.kind ?? 'not_ours' }, 'slack approval click');
    const settled =
      outcome.result && outcome.channel !== undefined
        ? settledMemoryCard(
            outcome.result,
            { platform: 'slack', conversation: outcome.channel, thread: outcome.thread },
            body.container?.message_ts ?? body.message?.ts,
          )
        : undefined;
    if (settled)
      this.detached(this.outbound.approvalDecided(settled.to, settled.messageId, settled.card, settled.outcome), (err) =>
        log.warn({ err }, 'could not show the decision on a memory card'),
      );
    if (outcome.answer === undefined) return;
    if (outcome.channel === undefined) return log.warn('approval click without a channel: the clicker cannot be answered');
    this.detached(this.outbound.ephemeral(outcome.channel, body.user.id, outcome.answer, outcome.thread), (err) =>
      log.warn({ err }, 'could not answer the approval click'),
    );
  }

  /** A write after the click's ack, never holding it; awaited on stop. */
  private detached(write: Promise<void>, failed: (err: unknown) => void): void {
    const sent: Promise<void> = write.catch(failed).finally(() => this.answering.delete(sent));
    this.answering.add(sent);
  }

  /** A command typed in a mention or DM is answered where it was typed, without holding the ack. */
  private replyDetached(to: InboundMessage, text: string): void {
    this.outbound.post(to, text, 'notice').catch((err: unknown) => this.ctx.log.warn({ err, channel: to.conversation }, 'could not answer a command'));
  }
}
