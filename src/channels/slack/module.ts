import { SlackGateway } from './gateway.js';
import type { ChannelModule, GatewayContext, OutboundContext } from '../types.js';
import { SlackOutbound } from './outbound.js';

/**
 * Slack: enabled by SLACK_BOT_TOKEN (with SLACK_SIGNING_SECRET for HTTP events, or
 * SLACK_APP_TOKEN for Socket Mode). Registered in src/channels/registry.ts.
 */
export const slackChannel = {
  name: 'slack',
  inbound: (ctx: GatewayContext): SlackGateway => new SlackGateway(ctx),
  outbound(ctx: OutboundContext): SlackOutbound {
    const slack = ctx.config.channels.slack;
    if (!slack) throw new Error('the slack channel needs SLACK_BOT_TOKEN');
    return new SlackOutbound({
      token: slack.botToken,
      apiUrl: slack.apiUrl,
      redis: ctx.redis,
      prefix: ctx.config.queue.prefix,
      log: ctx.log,
      linkPreviews: ctx.config.linkPreviews,
    });
  },
} satisfies ChannelModule;
