import type { AccessConfig } from '../config/config.js';
import type { DenyReason, InboundMessage } from '../channels/types.js';

/**
 * The static part of access control: what the configuration alone says about one message.
 * `pairing` means "unknown DM sender under the pairing policy": the gate looks the sender up in
 * the pairing store and issues a code when they are not approved yet.
 */
export type PolicyVerdict = { allow: true } | { allow: false; reason: DenyReason };

const PLATFORM_NAMES: Record<string, string> = { telegram: 'Telegram', slack: 'Slack', discord: 'Discord' };

export function platformName(platform: string): string {
  return PLATFORM_NAMES[platform] ?? platform;
}

/** On ALLOWED_USERS (or the legacy TELEGRAM_ALLOWED_USERS): by id, or for Telegram by username. */
export function isListedUser(message: Pick<InboundMessage, 'platform' | 'sender'>, access: AccessConfig): boolean {
  const { platform, sender } = message;
  if (access.allowedUsers.includes(`${platform}:${sender.id}`)) return true;
  return sender.handle !== undefined && access.allowedUsers.includes(`${platform}:${sender.handle.toLowerCase()}`);
}

/** A group message is in an allowed place when any of its ids (channel, parent channel, guild) is listed. */
function isListedPlace(platform: string, ids: readonly string[], access: AccessConfig): boolean {
  return ids.some((id) => access.allowedChannels.includes(`${platform}:${id}`));
}

/**
 * The configured policy applied to one message of a platform channel (the terminal chat never
 * comes here). A message without `where` is treated as a DM: the stricter of the two.
 */
export function policyVerdict(message: Pick<InboundMessage, 'platform' | 'sender' | 'where'>, access: AccessConfig): PolicyVerdict {
  const where = message.where ?? { kind: 'dm' as const };
  if (where.kind === 'group') {
    if (message.platform === 'telegram' && access.telegramGroupSenders && !isListedUser(message, access)) return { allow: false, reason: 'not_allowed' };
    if (access.group === 'allowlist' && !isListedPlace(message.platform, where.ids, access)) return { allow: false, reason: 'channel_not_allowed' };
    return { allow: true };
  }
  const policy = access.dm[message.platform as keyof AccessConfig['dm']] ?? 'pairing';
  if (policy === 'disabled') return { allow: false, reason: 'dm_disabled' };
  if (policy === 'open' || isListedUser(message, access)) return { allow: true };
  return { allow: false, reason: policy === 'allowlist' ? 'not_allowed' : 'pairing' };
}
