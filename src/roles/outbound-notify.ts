import type { Redis } from 'ioredis';
import type { Config } from '../config/config.js';
import type { Logger } from '../log.js';
import { CHANNELS } from '../channels/registry.js';
import type { OutboundAdapter } from '../channels/types.js';
import type { Notify } from '../access/pairing-admin.js';

/**
 * A Notify through each platform's outbound half (plain HTTP, no gateway connection), so the
 * admin CLI can tell a person from any machine that has the configuration.
 */
export function outboundNotify(config: Config, redis: Redis, log: Logger): Notify {
  const adapters = new Map<string, Promise<OutboundAdapter>>();
  const adapterOf = (platform: string): Promise<OutboundAdapter> => {
    let adapter = adapters.get(platform);
    if (!adapter) {
      const entry = CHANNELS.find((c) => c.name === platform && c.enabled(config));
      if (!entry) return Promise.reject(new Error(`the ${platform} channel is not configured here`));
      adapter = entry.load().then((m) => m.outbound({ config, redis, log: log.child({ channel: platform }) }));
      adapters.set(platform, adapter);
    }
    return adapter;
  };
  return async (to, text) => {
    await (await adapterOf(to.platform)).post(to, text, 'notice');
  };
}
