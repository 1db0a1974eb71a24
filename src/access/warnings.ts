import type { Config } from '../config/config.js';
import type { Logger } from '../log.js';

/** One line at start-up per platform anyone can use: an open door should be a choice someone sees. */
export function warnOpenDoors(config: Config, log: Logger): void {
  for (const platform of ['telegram', 'slack', 'discord'] as const) {
    if (!config.channels[platform]) continue;
    const policy = config.access.dm[platform];
    if (policy === 'open') log.warn({ platform }, `${platform.toUpperCase()}_DM_POLICY (or DM_POLICY) is open: anyone who can message this bot can use it`);
    else log.info({ platform, dmPolicy: policy, groupPolicy: config.access.group }, 'access policy');
  }
  if (config.access.group === 'open') log.warn('GROUP_POLICY is open: anyone in any group or server that adds this bot can use it, pairing or not');
}
