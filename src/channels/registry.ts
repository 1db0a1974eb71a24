import type { Config } from '../config/config.js';
import type { ChannelModule } from './types.js';

export type { ChannelHealth, ChannelModule, GatewayContext, InboundChannel, OutboundContext } from './types.js';

/** A platform channel, loaded only when its configuration enables it (each SDK costs start-up time and memory). */
export interface ChannelEntry {
  readonly name: string;
  enabled(config: Config): boolean;
  load(): Promise<ChannelModule>;
}

/** Platform channels; each lives in src/channels/<name>/. */
export const CHANNELS: readonly ChannelEntry[] = [
  { name: 'slack', enabled: (c) => c.channels.slack !== undefined, load: async () => (await import('./slack/module.js')).slackChannel },
  { name: 'telegram', enabled: (c) => c.channels.telegram !== undefined, load: async () => (await import('./telegram/module.js')).telegramModule },
  { name: 'discord', enabled: (c) => c.channels.discord !== undefined, load: async () => (await import('./discord/module.js')).discordChannel },
];

/** Every platform a session can belong to: the channels above and the terminal chat. */
export const PLATFORMS: ReadonlySet<string> = new Set(['terminal', ...CHANNELS.map((c) => c.name)]);
