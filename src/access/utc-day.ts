/**
 * Daily budgets count by UTC day: every worker, wherever it runs, agrees on when a day ends,
 * and the reset line can name one time for everybody.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

/** `2025-03-09` for any moment of that UTC day. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The next 00:00 UTC after `ms` (a moment exactly at midnight belongs to the day it starts). */
export function nextUtcMidnight(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS + DAY_MS;
}

/** A wait as people read it, rounded up to the minute: `5 h 12 min`, `3 h`, `7 min`, never `0 min`. */
export function formatWait(ms: number): string {
  const minutes = Math.max(1, Math.ceil(ms / 60_000));
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  if (h === 0) return `${m} min`;
  return m === 0 ? `${h} h` : `${h} h ${m} min`;
}
