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
 *
 * In a group, under GROUP_POLICY=pairing (the default) or allowlist, a sender must be someone the
 * DM policy lets in (listed, paired, or anyone under DM_POLICY=open) — so a stranger cannot get
 * past pairing by adding the bot to a group of their own. Two kinds of place vouch for their
 * members instead: a place on ALLOWED_CHANNELS, and a Slack channel of the installing workspace.
 * A Slack user from another organisation (a shared channel) is never vouched for by the place.
 * GROUP_POLICY=open answers anyone in any group (warned at start).
 */
export function policyVerdict(message: Pick<InboundMessage, 'platform' | 'sender' | 'where'>, access: AccessConfig): PolicyVerdict {
  const where = message.where ?? { kind: 'dm' as const };
  if (where.kind === 'group') {
    if (message.platform === 'telegram' && access.telegramGroupSenders && !isListedUser(message, access)) return { allow: false, reason: 'not_allowed' };
    if (access.group === 'open') return { allow: true };
    const listedPlace = isListedPlace(message.platform, where.ids, access);
    if (access.group === 'allowlist' && !listedPlace) return { allow: false, reason: 'channel_not_allowed' };
    const vouched = listedPlace || message.platform === 'slack';
    if (vouched && message.sender.foreign !== true) return { allow: true };
    return senderVerdict(message, access, true);
  }
  return senderVerdict(message, access, false);
}

/**
 * What the platform's DM policy says of this sender. In a DM, `disabled` refuses everyone; in a
 * group it only means nobody can pair, so a listed sender is still let in.
 */
function senderVerdict(message: Pick<InboundMessage, 'platform' | 'sender'>, access: AccessConfig, inGroup: boolean): PolicyVerdict {
  const policy = access.dm[message.platform as keyof AccessConfig['dm']] ?? 'pairing';
  if (policy === 'disabled' && !inGroup) return { allow: false, reason: 'dm_disabled' };
  if (policy === 'open' || isListedUser(message, access)) return { allow: true };
  return { allow: false, reason: policy === 'pairing' ? 'pairing' : 'not_allowed' };
}
