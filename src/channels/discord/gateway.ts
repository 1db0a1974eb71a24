import type { ChannelHealth } from '../types.js';
import type { EventEmitter } from 'node:events';
import { Client, Events, GatewayIntentBits, Options, Partials } from 'discord.js';
import type { Logger } from '../../log.js';
import { DiscordApiError, safeError } from './errors.js';
import type { DiscordHandlers } from './handlers.js';
import type { DiscordRest } from './rest.js';
import { registerCommands } from './slash.js';

export interface DiscordGatewayOptions {
  token: string;
  applicationId: string;
  apiUrl: string | undefined;
  guildId: string | undefined;
  /** Ask for the privileged Message Content intent; without it the bot reads only mentions and DMs. */
  messageContent: boolean;
  rest: DiscordRest;
  handlers: DiscordHandlers;
  log: Logger;
}

/** The intents the bot asks for. */
export function intentsFor(messageContent: boolean): GatewayIntentBits[] {
  const base = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages];
  return messageContent ? [...base, GatewayIntentBits.MessageContent] : base;
}

/** What a close code or login failure means for the person running the bot. */
export function describeFailure(code: number | undefined, err?: unknown): { detail: string; fatal: boolean } {
  if (code === 4004 || (err as { code?: unknown } | undefined)?.code === 'TokenInvalid' || (err instanceof DiscordApiError && err.status === 401)) {
    return { detail: 'Discord rejected DISCORD_TOKEN: copy the bot token again (Developer Portal → Bot → Reset Token)', fatal: true };
  }
  if (code === 4014) {
    return {
      detail:
        'Discord refused the Message Content intent: enable it (Developer Portal → Bot → Privileged Gateway Intents → Message Content Intent) or set DISCORD_MESSAGE_CONTENT=0 for mention-only mode',
      fatal: true,
    };
  }
  if (code === 4013) return { detail: 'Discord refused the requested intents as invalid (4013)', fatal: true };
  if (code === 4010 || code === 4011) return { detail: `Discord requires sharding for this bot (close code ${code})`, fatal: true };
  if (code !== undefined) return { detail: `the gateway connection closed (code ${code})`, fatal: false };
  return { detail: `could not connect to the gateway: ${err instanceof Error ? err.message : String(err)}`, fatal: false };
}

/**
 * The Discord gateway connection (discord.js): slash commands are registered, then the client
 * logs in; reconnecting and resuming are the library's. health() is connected only between
 * READY (or RESUMED) and the next disconnect. Start-up does not block the gateway role: a
 * failure is retried with backoff, or, when it cannot succeed (bad token, refused intent),
 * reported by health() until the configuration is fixed.
 */
export class DiscordGateway {
  readonly name = 'discord';
  private client: Client | undefined;
  private state: ChannelHealth = { connected: false, detail: 'not started' };
  private lastEventAt: number | undefined;
  private lastCloseCode: number | undefined;
  private registered = false;
  private stopped = false;
  private readonly wake = new AbortController();

  constructor(private readonly options: DiscordGatewayOptions) {}

  async start(): Promise<void> {
    this.state = { connected: false, detail: 'connecting to the Discord gateway' };
    void this.connectLoop().catch((err: unknown) => this.options.log.error({ err: safeError(err) }, 'discord connect loop failed'));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake.abort();
    this.state = { connected: false, detail: 'stopped' };
    await this.client?.destroy();
  }

  health(): ChannelHealth {
    return { ...this.state, ...(this.lastEventAt !== undefined && { lastEventAt: this.lastEventAt }) };
  }

  private async connectLoop(): Promise<void> {
    const { log } = this.options;
    let wait = 1_000;
    while (!this.stopped) {
      try {
        await this.register();
        await this.login();
        return;
      } catch (err) {
        if (this.stopped) return;
        const { detail, fatal } = describeFailure(this.lastCloseCode, err);
        this.state = { connected: false, detail };
        log.error({ err: safeError(err), retryInMs: fatal ? undefined : wait }, `discord: ${detail}`);
        if (fatal) return;
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, wait);
          this.wake.signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)), { once: true });
        });
        wait = Math.min(wait * 2, 60_000);
      }
    }
  }

  /** Registration failing for any reason but a bad token leaves the bot usable by mentions and DMs: logged, not fatal. */
  private async register(): Promise<void> {
    if (this.registered) return;
    const { rest, applicationId, guildId, log } = this.options;
    try {
      const result = await registerCommands(rest, applicationId, guildId);
      this.registered = true;
      log.info({ scope: guildId ? `guild ${guildId}` : 'global', result }, 'slash commands registered');
    } catch (err) {
      if (err instanceof DiscordApiError && err.status === 401) throw err;
      log.error({ err: safeError(err) }, 'could not register the slash commands (mentions and DMs still work); is the applications.commands scope granted?');
    }
  }

  private async login(): Promise<void> {
    const { token, apiUrl, messageContent, log } = this.options;
    this.lastCloseCode = undefined;
    const client = new Client({
      intents: intentsFor(messageContent),
      // DM channels are not cached before their first message; without this their messages are dropped.
      partials: [Partials.Channel],
      allowedMentions: { parse: [] },
      makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
      ...(apiUrl && { rest: { api: apiUrl } }),
    });
    this.client = client;
    this.attach(client);
    await client.login(token);
    log.info({ user: client.user?.username, intents: messageContent ? 'with message content' : 'mention-only' }, 'discord gateway connected');
  }

  private attach(client: Client): void {
    const { log, handlers } = this.options;
    const up = () => {
      this.state = { connected: true };
    };
    client.on(Events.ClientReady, up);
    client.on(Events.ShardReady, up);
    client.on(Events.ShardResume, up);
    client.on(Events.ShardReconnecting, () => {
      if (!this.stopped) this.state = { connected: false, detail: 'the gateway connection dropped; reconnecting' };
    });
    client.on(Events.ShardDisconnect, (event) => {
      this.lastCloseCode = event.code;
      const { detail } = describeFailure(event.code);
      this.state = { connected: false, detail };
      log.error({ code: event.code }, `discord: ${detail}`);
    });
    client.on(Events.ShardError, (err) => log.warn({ err: safeError(err) }, 'discord gateway error'));
    client.on(Events.Error, (err) => log.error({ err: safeError(err) }, 'discord client error'));
    // Every dispatch from the gateway, whatever it is: readiness shows when the last one arrived.
    (client as unknown as EventEmitter).on('raw', () => {
      this.lastEventAt = Date.now();
    });
    client.on(Events.MessageCreate, (message) => {
      const me = client.user;
      if (!me) return;
      const roleId = message.guild?.roles.botRoleFor(me)?.id;
      void handlers
        .onMessage(message, { id: me.id, name: me.username, ...(roleId && { roleId }) })
        .catch((err: unknown) => log.error({ err: safeError(err), eventId: message.id }, 'discord message handler failed'));
    });
    client.on(Events.InteractionCreate, (interaction) => {
      if (interaction.isButton()) {
        void handlers
          .onButton(interaction)
          .catch((err: unknown) => log.error({ err: safeError(err), eventId: interaction.id }, 'discord button handler failed'));
        return;
      }
      if (!interaction.isChatInputCommand()) return;
      void handlers
        .onCommand(interaction, client.user?.username ?? '')
        .catch((err: unknown) => log.error({ err: safeError(err), eventId: interaction.id }, 'discord command handler failed'));
    });
  }
}
