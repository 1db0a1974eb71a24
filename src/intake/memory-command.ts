import type { Redis } from 'ioredis';
import type { InboundMessage } from '../channels/types.js';
import type { MemoryMode } from '../config/config.js';
import { channelOwner, type Identities } from '../memory/identity.js';
import type { MemoryOwner, MemoryStore } from '../memory/store.js';
import type { StoredEntry } from '../memory/entry.js';
import type { AgentRoster } from '../profiles/roster.js';
import { channelOf } from '../profiles/bindings.js';
import type { SessionKeys } from '../queue/keys.js';

/** Where /memory can be read: only the person, so in a group they are sent where it is private. */
const ONLY_PRIVATELY = 'Your memory is shown only to you: DM me /memory (in Slack `/ask memory`, in Discord the /memory command — their answers only you see).';

/**
 * /memory and /forget: a person sees and removes what is remembered about them (in this
 * conversation's agent), never anyone else's. The list is shown only where the answer is private
 * (a DM, an ephemeral answer); /forget works anywhere and names no text in a group.
 */
export class MemoryCommand {
  constructor(
    private readonly redis: Redis,
    private readonly keys: SessionKeys,
    private readonly store: MemoryStore,
    private readonly identities: Identities,
    private readonly roster: AgentRoster,
    private readonly mode: MemoryMode,
  ) {}

  async memory(session: string, message: InboundMessage): Promise<string> {
    const here = await this.owner(session, message);
    if (!here) return 'Memory is off here: I do not remember anything between conversations.';
    const { who, mode } = here;
    if (!isPrivate(message)) return [ONLY_PRIVATELY, ...(mode === 'person+channel' ? await this.shared(message, who.agent) : [])].join('\n');
    const entries = await this.store.list(who);
    if (entries.length === 0) return 'I remember nothing about you yet. Say "remember that …" and I will.';
    return [
      `What I remember about you (${entries.length}); /forget <number> or /forget all removes it:`,
      ...entries.map((e, i) => `${i + 1}. ${e.text}${e.state === 'pending' ? ' (not used: waiting for your Keep)' : ''}`),
    ].join('\n');
  }

  async forget(session: string, message: InboundMessage, args: string): Promise<{ reply: string; ok: boolean }> {
    const who = (await this.owner(session, message))?.who;
    if (!who) return { reply: 'Memory is off here: there is nothing to forget.', ok: false };
    const what = args.trim().toLowerCase();
    if (what === '') return { reply: 'What should I forget? /forget <number> (as /memory lists them) or /forget all.', ok: false };
    if (what === 'all') {
      const n = await this.store.forgetAll(who);
      return { reply: n === 0 ? 'There was nothing to forget.' : `Forgotten: all ${n} thing(s) I remembered about you.`, ok: true };
    }
    const entries = await this.store.list(who);
    const entry = pick(entries, what);
    if (!entry) return { reply: `Nothing with the number or id "${args.trim()}": /memory lists them (privately).`, ok: false };
    await this.store.forget(who, entry.id);
    return { reply: isPrivate(message) ? `Forgotten: ${entry.text}` : 'Forgotten.', ok: true };
  }

  /** Under person+channel, the channel's shared memory: everyone there may see it, so it is listed in the group. */
  private async shared(message: InboundMessage, agent: string): Promise<string[]> {
    const entries = (await this.store.list({ agent, owner: channelOwner(message.platform, channelOf(message)) })).filter((e) => e.state === 'kept');
    if (entries.length === 0) return ['This channel shares no memory yet.'];
    return ['What everyone in this channel shares:', ...entries.map((e) => `- ${e.text}`)];
  }

  /** The asker's memory in this conversation's agent, and that agent's mode; undefined when it remembers nothing. */
  private async owner(session: string, message: InboundMessage): Promise<{ who: MemoryOwner; mode: MemoryMode } | undefined> {
    const profile = this.roster.forSession((await this.redis.get(this.keys.agentOf(session))) ?? undefined, message);
    const mode = profile.memory ?? this.mode;
    if (mode === 'off') return undefined;
    return { who: { agent: profile.name, owner: await this.identities.personOf(message.platform, message.sender.id) }, mode };
  }
}

function isPrivate(message: InboundMessage): boolean {
  return message.privateReply === true || (message.where?.kind ?? 'dm') === 'dm';
}

/** `3` (the list's number) or an entry id. */
function pick(entries: readonly StoredEntry[], what: string): StoredEntry | undefined {
  if (/^\d+$/.test(what)) return entries[Number(what) - 1];
  return entries.find((e) => e.id === what);
}
