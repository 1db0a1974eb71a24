import type { Provenance, StoredEntry } from './entry.js';
import { IDENTITY, type Identities } from './identity.js';
import type { MemoryStore } from './store.js';

/** A channel's shared memory (`person+channel`): `channel:` and the channel's id. */
const CHANNEL = /^channel:\S+$/;

/** Input the operator got wrong (an id of no known form): the API answers 400, the CLI exits 2. */
export class MemoryAdminError extends Error {
  override name = 'MemoryAdminError';
}

/** Who was asked about: the id the memory is kept under, and the identity asked for when it was linked to that one. */
export interface Resolved {
  /** A person id (`platform:userId`) or a channel (`channel:…`). */
  person: string;
  /** The identity given, when the operator had linked it to `person`. */
  resolvedFrom?: string;
}

export interface AgentMemory {
  agent: string;
  entries: StoredEntry[];
}

export interface MemoryListing extends Resolved {
  /** One row per agent with memory of the person, by agent name. */
  agents: AgentMemory[];
  /** What `resolvedFrom` had under its own id before it was linked: no agent reads it any more, and delete removes it too. */
  beforeLink?: AgentMemory[];
}

export interface ExportedEntry {
  id: string;
  text: string;
  state: 'kept' | 'pending';
  provenance: Provenance;
  createdAt: string;
  usedAt: string;
}

/** A listing as plain JSON: ISO times, and when it was taken. */
export interface MemoryExport extends Resolved {
  exportedAt: string;
  agents: { agent: string; entries: ExportedEntry[] }[];
  beforeLink?: { agent: string; entries: ExportedEntry[] }[];
}

export interface MemoryDeleted extends Resolved {
  /** How many entries went, in all. */
  deleted: number;
  /** Per agent that had any. */
  agents: { agent: string; deleted: number }[];
}

export interface Linked {
  /** The person both identities are now. */
  person: string;
  identity: string;
  /** Entries `identity` had under its own id: no agent reads them after the link (list shows them as `beforeLink`). */
  unused: number;
}

/**
 * The operator's side of memory, the same from `npm run admin -- memory …` and from the admin API:
 * list, export and delete a person's memory in every agent's namespace, and link identities.
 * An identity given for a person is first resolved to the person it was linked to.
 */
export class MemoryAdmin {
  constructor(
    private readonly store: MemoryStore,
    private readonly identities: Identities,
    private readonly now: () => number = Date.now,
  ) {}

  async list(who: string): Promise<MemoryListing> {
    const resolved = await this.resolve(who);
    const agents = await this.memoryOf(resolved.person);
    const before = resolved.resolvedFrom === undefined ? [] : await this.memoryOf(resolved.resolvedFrom);
    return { ...resolved, agents, ...(before.length > 0 && { beforeLink: before }) };
  }

  async export(who: string): Promise<MemoryExport> {
    const { agents, beforeLink, ...resolved } = await this.list(who);
    return {
      ...resolved,
      exportedAt: new Date(this.now()).toISOString(),
      agents: agents.map(exported),
      ...(beforeLink && { beforeLink: beforeLink.map(exported) }),
    };
  }

  /** Deletes the person's memory in every agent's namespace, or in `agent`'s only. */
  async delete(who: string, agent?: string): Promise<MemoryDeleted> {
    if (agent !== undefined && !/^\S{1,64}$/.test(agent)) throw new MemoryAdminError(`"${agent}" is not an agent name`);
    const resolved = await this.resolve(who);
    const counts = new Map<string, number>();
    for (const owner of owners(resolved))
      for (const a of await this.store.namespaces(owner)) {
        if (agent !== undefined && a !== agent) continue;
        const n = await this.store.forgetAll({ agent: a, owner });
        if (n > 0) counts.set(a, (counts.get(a) ?? 0) + n);
      }
    const agents = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([a, deleted]) => ({ agent: a, deleted }));
    return { ...resolved, deleted: agents.reduce((sum, a) => sum + a.deleted, 0), agents };
  }

  /** Makes `other` the same person as `identity` (whose person id stays). */
  async link(identity: unknown, other: unknown): Promise<Linked> {
    const a = checkIdentity(identity);
    const b = checkIdentity(other);
    if (a === b) throw new MemoryAdminError(`"${a}" is already itself: link two different identities`);
    const person = await this.identities.link(a, b);
    const unused = b === person ? 0 : (await this.memoryOf(b)).reduce((sum, m) => sum + m.entries.length, 0);
    return { person, identity: b, unused };
  }

  /** Undoes a link: the identity is its own person again (its memory since the link stays with the person). */
  async unlink(identity: unknown): Promise<{ identity: string; unlinked: boolean }> {
    const id = checkIdentity(identity);
    return { identity: id, unlinked: await this.identities.unlink(id) };
  }

  async whois(identity: unknown): Promise<{ identity: string; person: string; linked: boolean }> {
    const id = checkIdentity(identity);
    const person = await this.identities.personOf(...split(id));
    return { identity: id, person, linked: person !== id };
  }

  /** The person (or channel) an id names. */
  async resolve(who: unknown): Promise<Resolved> {
    if (typeof who === 'string' && CHANNEL.test(who)) return { person: who };
    if (typeof who !== 'string' || !IDENTITY.test(who))
      throw new MemoryAdminError(`"${String(who)}" is neither a person (platform:userId, e.g. telegram:42) nor a channel (channel:<platform>:<id>)`);
    const person = await this.identities.personOf(...split(who));
    return person === who ? { person } : { person, resolvedFrom: who };
  }

  private async memoryOf(owner: string): Promise<AgentMemory[]> {
    const all = await Promise.all((await this.store.namespaces(owner)).map(async (agent) => ({ agent, entries: await this.store.list({ agent, owner }) })));
    return all.filter((m) => m.entries.length > 0);
  }
}

function owners(r: Resolved): string[] {
  return r.resolvedFrom === undefined ? [r.person] : [r.person, r.resolvedFrom];
}

function checkIdentity(id: unknown): string {
  if (typeof id !== 'string' || !IDENTITY.test(id)) throw new MemoryAdminError(`"${String(id)}" is not platform:userId (e.g. telegram:42, slack:U0123ABC)`);
  return id;
}

function split(id: string): [string, string] {
  const at = id.indexOf(':');
  return [id.slice(0, at), id.slice(at + 1)];
}

function exported(m: AgentMemory): { agent: string; entries: ExportedEntry[] } {
  return {
    agent: m.agent,
    entries: m.entries.map((e) => ({
      id: e.id,
      text: e.text,
      state: e.state,
      provenance: e.provenance,
      createdAt: new Date(e.createdAt).toISOString(),
      usedAt: new Date(e.usedAt).toISOString(),
    })),
  };
}
