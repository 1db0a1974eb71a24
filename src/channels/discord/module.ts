import type { ChannelModule, GatewayContext, OutboundContext } from '../types.js';
import type { Config } from '../../config/config.js';
import type { Logger } from '../../log.js';
import type { Redis } from 'ioredis';
import { CDN_HOSTS } from './download.js';
import { DiscordGateway } from './gateway.js';
import { DiscordHandlers } from './handlers.js';
import { DiscordOutbound } from './outbound.js';
import { DiscordRest } from './rest.js';

type DiscordConfig = NonNullable<Config['channels']['discord']>;

function settings(config: Config): DiscordConfig {
  const discord = config.channels.discord;
  if (!discord) throw new Error('the discord channel is not configured (DISCORD_TOKEN and DISCORD_APPLICATION_ID)');
  return discord;
}

function outboundFor(config: Config, redis: Redis, log: Logger): { rest: DiscordRest; out: DiscordOutbound } {
  const d = settings(config);
  const rest = new DiscordRest({ token: d.token, apiUrl: d.apiUrl });
  // Attachments come from Discord's CDN, or from the REST host itself when DISCORD_API_URL points at a proxy.
  const downloadHosts = [...CDN_HOSTS, ...(d.apiUrl ? [new URL(d.apiUrl).host] : [])];
  return { rest, out: new DiscordOutbound({ rest, log, downloadHosts, redis, prefix: config.queue.prefix, linkPreviews: config.linkPreviews }) };
}

/**
 * Discord: a discord.js gateway in the gateway role; plain REST (and interaction webhooks) in
 * workers. Enabled by DISCORD_TOKEN with DISCORD_APPLICATION_ID; registered in src/channels/registry.ts.
 */
export const discordChannel = {
  name: 'discord',
  inbound(ctx: GatewayContext): DiscordGateway {
    const d = settings(ctx.config);
    const { rest, out } = outboundFor(ctx.config, ctx.redis, ctx.log);
    const handlers = new DiscordHandlers({ intake: ctx.intake, approvals: ctx.approvals, out, redis: ctx.redis, prefix: ctx.prefix, log: ctx.log });
    return new DiscordGateway({
      token: d.token,
      applicationId: d.applicationId,
      apiUrl: d.apiUrl,
      guildId: d.guildId,
      messageContent: d.messageContent,
      rest,
      handlers,
      log: ctx.log,
    });
  },
  outbound(ctx: OutboundContext): DiscordOutbound {
    return outboundFor(ctx.config, ctx.redis, ctx.log).out;
  },
} satisfies ChannelModule;
