import type { Logger } from '../log.js';
import { cosine, type Embedder } from './embeddings.js';
import type { StoredEntry } from './entry.js';
import { rankEntries } from './rank.js';
import type { MemoryOwner, MemoryStore } from './store.js';

/** Whose memory a turn may touch: the asker's, and under `person+channel` the channel's, which everyone there shares. */
export interface TurnMemoryOwners {
  person: MemoryOwner;
  channel?: MemoryOwner;
}

/** The store and, with EMBEDDINGS_MODEL, the embedder: what remembering and searching need. */
export interface MemoryAccess {
  store: MemoryStore;
  embedder?: Embedder;
  log?: Logger;
}

export interface FoundEntry extends StoredEntry {
  who: MemoryOwner;
  /** From the channel's shared memory. */
  shared: boolean;
}

/** Reciprocal rank fusion's constant: a rank's weight is 1 / (K + rank). */
const K = 60;

/**
 * The kept entries of a turn's owners, best first for `query`: lexical (BM25) ranks, fused with
 * the embeddings' cosine ranks when EMBEDDINGS_MODEL is set (reciprocal rank fusion). An
 * embedding that fails leaves the lexical order: a search never fails for it.
 */
export async function searchMemory(access: MemoryAccess, owners: TurnMemoryOwners, query: string): Promise<FoundEntry[]> {
  const all = owners.channel ? [owners.person, owners.channel] : [owners.person];
  const found = (
    await Promise.all(
      all.map(async (who) => (await access.store.list(who)).filter((e) => e.state === 'kept').map((e) => ({ ...e, who, shared: who !== owners.person }))),
    )
  ).flat();
  if (found.length === 0) return [];
  const ranked = rankEntries(found, query);
  const lexical = ranked.map((r) => r.entry);
  if (!access.embedder) return lexical;
  // Only a match counts in the fusion: entries that share no word (or point elsewhere) add nothing.
  const matching = ranked.filter((r) => r.score > 0).map((r) => r.entry);
  let semantic: FoundEntry[];
  try {
    const [[q], vectors] = await Promise.all([access.embedder.embed([query]), Promise.all(all.map((who) => access.store.vectors(who)))]);
    const byOwner = new Map(all.map((who, i) => [who, vectors[i]!]));
    semantic = found
      .map((e) => ({ e, v: byOwner.get(e.who)?.get(e.id) }))
      .filter((x): x is { e: FoundEntry; v: number[] } => x.v !== undefined)
      .map(({ e, v }) => ({ e, s: cosine(q!, v) }))
      .filter((x) => x.s > 0)
      .sort((a, b) => b.s - a.s)
      .map((x) => x.e);
  } catch (err) {
    access.log?.warn({ err }, 'embedding the memory query failed; recall is lexical this time');
    return lexical;
  }
  const score = new Map<FoundEntry, number>();
  matching.forEach((e, i) => score.set(e, 1 / (K + i + 1)));
  semantic.forEach((e, i) => score.set(e, (score.get(e) ?? 0) + 1 / (K + i + 1)));
  return [...lexical].sort((a, b) => (score.get(b) ?? 0) - (score.get(a) ?? 0) || b.usedAt - a.usedAt);
}

/** Embeds a remembered entry (with EMBEDDINGS_MODEL); a failure leaves it to lexical search. */
export async function embedEntry(access: MemoryAccess, who: MemoryOwner, id: string, text: string): Promise<void> {
  if (!access.embedder) return;
  try {
    const [vector] = await access.embedder.embed([text]);
    if (vector) await access.store.setVector(who, id, vector);
  } catch (err) {
    access.log?.warn({ err, memory: id }, 'embedding a memory failed; it is found by its words only');
  }
}
