import { createHash } from 'node:crypto';

/** `said`: the person's own words, in a turn that had read no tool result; `derived`: written in a turn that had. */
export type Provenance = 'said' | 'derived';

/**
 * One remembered thing. A `pending` entry (derived, waiting for the person's Keep) is never shown
 * to the model or used; only `kept` ones are.
 */
export interface MemoryEntry {
  id: string;
  text: string;
  createdAt: number;
  provenance: Provenance;
  state: 'kept' | 'pending';
}

/** An entry with when it was last used (put in a prompt or returned by recall). */
export interface StoredEntry extends MemoryEntry {
  usedAt: number;
}

export const MEMORY_TEXT_MAX = 1_000;

/** Whitespace collapsed, case kept: what an entry's text is compared and stored as. */
export function normaliseText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * An entry's id: from its text, so remembering the same thing twice (a retried call, a resumed
 * run) is one entry. Short, since people type it: `/forget` takes it as well as a list number.
 */
export function entryId(text: string): string {
  return createHash('sha256').update(normaliseText(text).toLowerCase()).digest('base64url').replace(/[-_]/g, '').slice(0, 8).toLowerCase();
}
