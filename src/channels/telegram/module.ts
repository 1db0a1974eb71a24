import { Api } from 'grammy';
import type { Config } from '../../config/config.js';
import type { Logger } from '../../log.js';
import type { ChannelModule, GatewayContext, OutboundContext } from '../types.js';
import { TelegramChannel, type TelegramGatewayDeps } from './gateway.js';
import { redactNetworkErrors } from './errors.js';
import { PLATFORM } from './ids.js';
import { TelegramOutbound } from './outbound.js';

/** Telegram's Bot API root, unless TELEGRAM_API_ROOT points at a local Bot API server. */
export const DEFAULT_API_ROOT = 'https://api.telegram.org';

type Settings = NonNullable<Config['channels']['telegram']>;

function settingsOf(config: Config): Settings {
  const settings = config.channels.telegram;
  if (!settings) throw new Error('the telegram channel needs TELEGRAM_BOT_TOKEN');
  return settings;
}

/** grammY refuses a root that ends in '/'. */
const apiRootOf = (settings: Settings) => (settings.apiRoot ?? DEFAULT_API_ROOT).replace(/\/+$/, '');

function outboundFor(config: Config, log: Logger): TelegramOutbound {
  const settings = settingsOf(config);
  const apiRoot = apiRootOf(settings);
  const api = new Api(settings.token, { apiRoot });
  api.config.use(redactNetworkErrors);
  return new TelegramOutbound(api, { token: settings.token, apiRoot, log, drafts: settings.drafts, linkPreviews: config.linkPreviews });
}

/** The Telegram channel (grammY). Registered in src/channels/registry.ts. */
export const telegramModule = {
  name: PLATFORM,
  inbound(ctx: GatewayContext): TelegramChannel {
    const settings = settingsOf(ctx.config);
    const deps: TelegramGatewayDeps = {
      settings: { ...settings, apiRoot: settings.apiRoot === undefined ? undefined : apiRootOf(settings) },
      attachmentMaxBytes: ctx.config.attachmentMaxBytes,
      intake: ctx.intake,
      approvals: ctx.approvals,
      app: ctx.app,
      redis: ctx.redis,
      prefix: ctx.prefix,
      log: ctx.log,
      outbound: outboundFor(ctx.config, ctx.log),
    };
    return new TelegramChannel(deps);
  },
  outbound(ctx: Pick<OutboundContext, 'config' | 'log'>): TelegramOutbound {
    return outboundFor(ctx.config, ctx.log);
  },
} satisfies ChannelModule;
