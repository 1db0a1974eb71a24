import type { InboundMessage } from '../channels/types.js';

/**
 * Which agent answers a conversation: a list of matches → agent, the most specific match wins
 * (the one that names more of platform, team/guild, channel, user and kind), and a default for
 * the rest. Two equally specific bindings that can both match one message are refused at start
 * (`findTies`), so the winner is never decided by the order of the file.
 */
export interface Binding {
  platform?: string;
  /** A Slack workspace (team id): implies platform slack. */
  team?: string;
  /** A Discord server (guild id): implies platform discord. */
  guild?: string;
  /** A channel, chat or DM id; a Discord thread also matches its parent channel's binding. */
  channel?: string;
  user?: string;
  kind?: 'dm' | 'group';
  agent: string;
}

const FIELDS = ['platform', 'team', 'guild', 'channel', 'user', 'kind'] as const;
type Field = (typeof FIELDS)[number];
type Constraints = Partial<Record<Field, string>>;

/** Where a message was said, as bindings see it. */
export interface Place {
  platform: string;
  /** The conversation first, then the channels it sits in (a Discord thread's parent). */
  channels: string[];
  team?: string;
  guild?: string;
  user: string;
  kind: 'dm' | 'group';
}

export function placeOf(message: Pick<InboundMessage, 'platform' | 'conversation' | 'sender' | 'where' | 'meta'>): Place {
  const guild = message.platform === 'discord' ? message.meta?.guildId : undefined;
  const team = message.platform === 'slack' ? message.meta?.team : undefined;
  const around = message.where?.kind === 'group' ? message.where.ids.filter((id) => id !== guild && id !== message.conversation) : [];
  return {
    platform: message.platform,
    channels: [message.conversation, ...around],
    ...(team !== undefined && { team }),
    ...(guild !== undefined && { guild }),
    user: message.sender.id,
    kind: message.where?.kind ?? 'dm',
  };
}

/** The channel a message was said in, outermost: a Discord thread's parent channel, else the conversation. */
export function channelOf(message: Pick<InboundMessage, 'platform' | 'conversation' | 'sender' | 'where' | 'meta'>): string {
  return placeOf(message).channels.at(-1)!;
}

/** team and guild name their platform: a binding that says one says the other. */
export function normaliseBinding(b: Binding): Binding {
  if (b.team !== undefined && b.platform === undefined) return { ...b, platform: 'slack' };
  if (b.guild !== undefined && b.platform === undefined) return { ...b, platform: 'discord' };
  return b;
}

const constraintsOf = (b: Binding): Constraints => Object.fromEntries(FIELDS.filter((f) => b[f] !== undefined).map((f) => [f, b[f]]));
const specificity = (c: Constraints): number => Object.keys(c).length;

function matches(b: Binding, place: Place): boolean {
  return (
    (b.platform === undefined || b.platform === place.platform) &&
    (b.team === undefined || b.team === place.team) &&
    (b.guild === undefined || b.guild === place.guild) &&
    (b.channel === undefined || place.channels.includes(b.channel)) &&
    (b.user === undefined || b.user === place.user) &&
    (b.kind === undefined || b.kind === place.kind)
  );
}

/**
 * The agent for a place: the most specific matching binding's, else `fallback`. Equal
 * specificity can only remain between a binding of a Discord thread and one of its parent
 * channel (start-up cannot know which thread sits in which channel): the thread's own wins.
 */
export function decideAgent(bindings: readonly Binding[], fallback: string, place: Place): string {
  let best: { agent: string; score: number } | undefined;
  for (const b of bindings) {
    if (!matches(b, place)) continue;
    const score = specificity(constraintsOf(b)) * 2 + (b.channel === place.channels[0] ? 1 : 0);
    if (!best || score > best.score) best = { agent: b.agent, score };
  }
  return best?.agent ?? fallback;
}

/**
 * Pairs of bindings with the same specificity that one message can match both of, naming
 * different agents, with no more specific binding covering exactly that case. One line each.
 */
export function findTies(bindings: readonly Binding[]): string[] {
  const all = bindings.map((b) => ({ agent: b.agent, c: constraintsOf(b) }));
  const lines: string[] = [];
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      const a = all[i]!;
      const b = all[j]!;
      if (a.agent === b.agent || specificity(a.c) !== specificity(b.c)) continue;
      const both = union(a.c, b.c);
      if (!both) continue;
      const settled = all.some((k) => specificity(k.c) > specificity(a.c) && FIELDS.every((f) => k.c[f] === undefined || k.c[f] === both[f]));
      if (settled) continue;
      lines.push(
        `bindings[${i}] (agent "${a.agent}") and bindings[${j}] (agent "${b.agent}") are equally specific and both match ${describe(both)}: add a more specific binding for it, or remove one`,
      );
    }
  }
  return lines;
}

/** The constraints a message matching both must meet; undefined when no message can (a field set to two values). */
function union(a: Constraints, b: Constraints): Constraints | undefined {
  const out: Constraints = { ...a };
  for (const f of FIELDS) {
    if (b[f] === undefined) continue;
    if (out[f] !== undefined && out[f] !== b[f]) return undefined;
    out[f] = b[f];
  }
  // A Slack team and a Discord guild never describe one message.
  if (out.team !== undefined && out.guild !== undefined) return undefined;
  if (out.platform !== undefined && ((out.team !== undefined && out.platform !== 'slack') || (out.guild !== undefined && out.platform !== 'discord')))
    return undefined;
  return out;
}

const describe = (c: Constraints): string =>
  `a message with ${FIELDS.filter((f) => c[f] !== undefined)
    .map((f) => `${f} ${c[f]}`)
    .join(', ')}`;
