import type { StoredEntry } from './entry.js';

/** Words of a text for matching: lowercase letters and digits, split on everything else; short stop words dropped. */
export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+(?:[-_.][\p{L}\p{N}]+)*/gu) ?? []).filter((t) => t.length > 1 && !STOP.has(t));
}

const STOP = new Set([
  'the',
  'and',
  'for',
  'that',
  'this',
  'with',
  'you',
  'are',
  'was',
  'but',
  'not',
  'have',
  'has',
  'what',
  'my',
  'me',
  'is',
  'of',
  'to',
  'in',
  'on',
  'at',
  'it',
  'an',
  'be',
  'do',
  'or',
]);

/**
 * Entries ranked for a query: BM25 over the entries' words (the collection is the owner's own
 * entries), then the most recently used first among equals. Entries sharing no word with the
 * query score 0 and come after, by recency, so a prompt still carries the newest when nothing matches.
 */
export function rankEntries<E extends Pick<StoredEntry, 'id' | 'text' | 'usedAt'>>(entries: readonly E[], query: string): { entry: E; score: number }[] {
  const q = [...new Set(terms(query))];
  const docs = entries.map((e) => terms(e.text));
  const avg = docs.reduce((n, d) => n + d.length, 0) / Math.max(1, docs.length);
  const df = new Map<string, number>();
  for (const d of docs) for (const t of new Set(d)) df.set(t, (df.get(t) ?? 0) + 1);
  const k1 = 1.2;
  const b = 0.75;
  const scored = entries.map((entry, i) => {
    const d = docs[i]!;
    let score = 0;
    for (const t of q) {
      const tf = d.filter((x) => x === t).length;
      if (tf === 0) continue;
      const n = df.get(t) ?? 0;
      const idf = Math.log(1 + (entries.length - n + 0.5) / (n + 0.5));
      score += (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * d.length) / Math.max(1, avg)));
    }
    return { entry, score };
  });
  return scored.sort((x, y) => y.score - x.score || y.entry.usedAt - x.entry.usedAt || x.entry.id.localeCompare(y.entry.id));
}
