import type { Config } from '../../config/config.js';
import type { Logger } from '../../log.js';
import type { Redis } from 'ioredis';
import { SlackGateway, type SlackGatewayContext } from './gateway.js';
import { SlackOutbound } from './outbound.js';

/**
 * Slack: enabled by SLACK_BOT_TOKEN (with SLACK_SIGNING_SECRET for HTTP events, or
 * SLACK_APP_TOKEN for Socket Mode). Registered in src/channels/registry.ts; its contexts are
 * typed here by what it uses (importing the registry's types back would make a cycle).
 */
export const slackChannel = {
  name: 'slack',
  enabled: (config: Config): boolean => config.channels.slack !== undefined,
  inbound: (ctx: SlackGatewayContext): SlackGateway => new SlackGateway(ctx),
  outbound(ctx: { config: Config; redis: Redis; log: Logger }): SlackOutbound {
    const slack = ctx.config.channels.slack;
    if (!slack) throw new Error('the slack channel needs SLACK_BOT_TOKEN');
    return new SlackOutbound({ token: slack.botToken, apiUrl: slack.apiUrl, redis: ctx.redis, prefix: ctx.config.queue.prefix, log: ctx.log });
  },
};
