/**
 * Discord API object shapes (users, members, guilds, channels, messages, interactions) as the
 * real API and gateway send them, for the fake Discord in discord-server.ts.
 */

export const DISCORD_EPOCH = 1_420_070_400_000n;
let increment = 0;

/** A snowflake made now (or `at`): time in the high bits, so later ids sort after earlier ones. */
export function snowflake(at = Date.now()): string {
  increment = (increment + 1) & 0xfff;
  return (((BigInt(at) - DISCORD_EPOCH) << 22n) | (1n << 17n) | BigInt(increment)).toString();
}

export interface UserObject {
  id: string;
  username: string;
  discriminator: string;
  global_name: string | null;
  avatar: null;
  bot?: boolean;
  public_flags: number;
  flags: number;
  banner: null;
  accent_color: null;
  avatar_decoration_data: null;
}

export function user(id: string, username: string, options: { bot?: boolean; globalName?: string } = {}): UserObject {
  return {
    id,
    username,
    discriminator: '0',
    global_name: options.globalName ?? null,
    avatar: null,
    ...(options.bot && { bot: true }),
    public_flags: 0,
    flags: 0,
    banner: null,
    accent_color: null,
    avatar_decoration_data: null,
  };
}

const JOINED = '2024-01-01T00:00:00.000000+00:00';

export function member(u: UserObject | undefined, roles: string[] = [], permissions?: string) {
  return {
    ...(u && { user: u }),
    nick: null,
    avatar: null,
    banner: null,
    roles,
    joined_at: JOINED,
    premium_since: null,
    deaf: false,
    mute: false,
    pending: false,
    flags: 0,
    communication_disabled_until: null,
    ...(permissions && { permissions }),
  };
}

export function role(id: string, name: string, position: number, permissions: string, botId?: string) {
  return {
    id,
    name,
    description: null,
    color: 0,
    colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
    hoist: false,
    icon: null,
    unicode_emoji: null,
    position,
    permissions,
    managed: botId !== undefined,
    mentionable: false,
    flags: 0,
    ...(botId && { tags: { bot_id: botId } }),
  };
}

export function textChannel(id: string, name: string, position = 0) {
  return {
    id,
    type: 0,
    name,
    position,
    permission_overwrites: [],
    parent_id: null,
    nsfw: false,
    topic: null,
    last_message_id: null,
    rate_limit_per_user: 0,
    flags: 0,
  };
}

export function threadChannel(id: string, guildId: string, parentId: string, ownerId: string, name: string) {
  return {
    id,
    type: 11,
    guild_id: guildId,
    parent_id: parentId,
    owner_id: ownerId,
    name,
    last_message_id: null,
    message_count: 0,
    member_count: 1,
    total_message_sent: 0,
    rate_limit_per_user: 0,
    flags: 0,
    thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: JOINED, locked: false, create_timestamp: JOINED },
  };
}

export function dmChannel(id: string, recipient: UserObject) {
  return { id, type: 1, last_message_id: null, flags: 0, recipients: [recipient] };
}

/** GUILD_CREATE's guild: the guild object plus the extra fields only the gateway sends. */
export function guildCreate(g: { id: string; name: string; ownerId: string; roles: unknown[]; channels: unknown[]; threads: unknown[]; members: unknown[] }) {
  return {
    id: g.id,
    name: g.name,
    icon: null,
    splash: null,
    discovery_splash: null,
    owner_id: g.ownerId,
    afk_channel_id: null,
    afk_timeout: 300,
    verification_level: 0,
    default_message_notifications: 0,
    explicit_content_filter: 0,
    roles: g.roles,
    emojis: [],
    features: [],
    mfa_level: 0,
    application_id: null,
    system_channel_id: null,
    system_channel_flags: 0,
    rules_channel_id: null,
    vanity_url_code: null,
    description: null,
    banner: null,
    premium_tier: 0,
    premium_subscription_count: 0,
    preferred_locale: 'en-US',
    public_updates_channel_id: null,
    nsfw_level: 0,
    premium_progress_bar_enabled: false,
    stickers: [],
    joined_at: JOINED,
    large: false,
    unavailable: false,
    member_count: g.members.length,
    voice_states: [],
    members: g.members,
    channels: g.channels,
    threads: g.threads,
    presences: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
  };
}

export interface AllowedMentions {
  parse?: string[];
  users?: string[];
  roles?: string[];
  replied_user?: boolean;
}

/**
 * Who a message notifies, by Discord's rules: without allowed_mentions everything in the text
 * pings (and a reply pings its author); with it, only what `parse`, `users`, `roles` and
 * `replied_user` allow. Entries: 'everyone', 'user:<id>', 'role:<id>', 'replied:<id>'.
 */
export function pingsOf(content: string, allowed: AllowedMentions | undefined, repliedAuthor: string | undefined): string[] {
  const parse = allowed ? (allowed.parse ?? []) : ['users', 'roles', 'everyone'];
  const out: string[] = [];
  if (/@(everyone|here)\b/.test(content) && parse.includes('everyone')) out.push('everyone');
  for (const [, id] of content.matchAll(/<@!?(\d+)>/g)) {
    if (parse.includes('users') || allowed?.users?.includes(id!)) out.push(`user:${id}`);
  }
  for (const [, id] of content.matchAll(/<@&(\d+)>/g)) {
    if (parse.includes('roles') || allowed?.roles?.includes(id!)) out.push(`role:${id}`);
  }
  if (repliedAuthor && (allowed ? allowed.replied_user === true : true)) out.push(`replied:${repliedAuthor}`);
  return out;
}

/** Discord's 400 for a bad form field; a dotted path (`components.0.components.1.custom_id`) nests as Discord nests it. */
export function formError(field: string, code: string, message: string) {
  const errors = field.split('.').reduceRight<Record<string, unknown>>((inner, key) => ({ [key]: inner }), { _errors: [{ code, message }] });
  return { message: 'Invalid Form Body', code: 50035, errors };
}

/**
 * What Discord refuses in a message's `components` (legacy components, no IS_COMPONENTS_V2
 * flag): at most 5 action rows (type 1) of 1 to 5 components; a button (type 2) has a style 1
 * to 6, a label of at most 80 characters, and, unless it is a link (5) or premium (6) button, a
 * `custom_id` of 1 to 100 characters unique within the message. Undefined when it is accepted.
 */
export function componentsError(components: unknown): ReturnType<typeof formError> | undefined {
  if (!Array.isArray(components)) return formError('components', 'BASE_TYPE_ARRAY', 'Must be an array.');
  if (components.length > 5) return formError('components', 'BASE_TYPE_MAX_LENGTH', 'Must be 5 or fewer in length.');
  const seen = new Set<string>();
  for (const [i, row] of components.entries()) {
    const at = `components.${i}`;
    if (row?.type !== 1) return formError(`${at}.type`, 'COMPONENT_LAYOUT_INVALID', 'Top-level components must be action rows (type 1).');
    if (!Array.isArray(row.components) || row.components.length < 1 || row.components.length > 5) {
      return formError(`${at}.components`, 'BASE_TYPE_BAD_LENGTH', 'Must be between 1 and 5 in length.');
    }
    for (const [j, c] of (row.components as any[]).entries()) {
      const here = `${at}.components.${j}`;
      if (c?.type !== 2) continue; // selects and others: not checked here
      if (!Number.isInteger(c.style) || c.style < 1 || c.style > 6)
        return formError(`${here}.style`, 'BASE_TYPE_CHOICES', 'Value must be one of (1, 2, 3, 4, 5, 6).');
      if (c.label !== undefined && (typeof c.label !== 'string' || c.label.length > 80))
        return formError(`${here}.label`, 'BASE_TYPE_MAX_LENGTH', 'Must be 80 or fewer in length.');
      if (c.style >= 5) {
        if (c.custom_id !== undefined)
          return formError(`${here}.custom_id`, 'BUTTON_COMPONENT_CUSTOM_ID_NOT_ALLOWED', 'A link or premium button cannot have a custom id.');
        continue;
      }
      if (typeof c.custom_id !== 'string' || c.custom_id.length < 1) return formError(`${here}.custom_id`, 'BASE_TYPE_REQUIRED', 'This field is required');
      if (c.custom_id.length > 100) return formError(`${here}.custom_id`, 'BASE_TYPE_BAD_LENGTH', 'Must be between 1 and 100 in length.');
      if (seen.has(c.custom_id)) return formError(`${here}.custom_id`, 'COMPONENT_CUSTOM_ID_DUPLICATED', 'Component custom id cannot be duplicated');
      seen.add(c.custom_id);
    }
  }
  return undefined;
}
