import { CronExpressionParser } from 'cron-parser';
import { DateTime } from 'luxon';
import { isTimezone } from '../lib/time.js';

/**
 * When a schedule fires, as BullMQ's job scheduler is given it: a cron pattern read in an IANA
 * timezone. A one-off time is a pattern too (its second, minute, hour, day and month), fired
 * once from just before it, so both kinds go through one scheduler and one cron library — the
 * one BullMQ computes firings with, so what we show is what it does (DST included).
 */
export type ScheduleSpec =
  | { kind: 'cron'; pattern: string; tz: string }
  | { kind: 'once'; pattern: string; tz: string /** ms since the epoch, whole seconds */; at: number };

export type WhenResult =
  | { ok: true; spec: ScheduleSpec /** the next firings, ms since the epoch (one for a one-off) */; next: number[] }
  | { ok: false; error: string };

export interface WhenOptions {
  now: number;
  /** Firings closer together than this are refused (a cron of every second would flood the chat). */
  minIntervalMs: number;
}

const ISO_START = /^\d{4}-\d{2}-\d{2}/;
/** Firings looked at to find a cron's shortest interval. */
const SAMPLED = 6;

/** `when` is a cron expression (5 fields, or 6 with seconds first) or an ISO 8601 date-time; `tz` an IANA name. */
export function parseWhen(when: string, tz: string | undefined, options: WhenOptions): WhenResult {
  const text = when.trim();
  if (tz === undefined || tz.trim() === '') {
    return {
      ok: false,
      error: 'A timezone is needed (an IANA name such as Europe/Berlin or America/New_York): ask the person which timezone they mean, then call again with it.',
    };
  }
  const zone = tz.trim();
  if (!isTimezone(zone)) return { ok: false, error: `"${zone}" is not an IANA timezone name (for example Europe/Berlin, America/New_York, Asia/Tokyo, UTC).` };
  return ISO_START.test(text) ? once(text, zone, options) : cron(text, zone, options);
}

function once(text: string, tz: string, options: WhenOptions): WhenResult {
  const parsed = DateTime.fromISO(text, { zone: tz });
  if (!parsed.isValid)
    return { ok: false, error: `"${text}" is not an ISO 8601 date-time (${parsed.invalidExplanation ?? parsed.invalidReason}); for example 2026-12-24T09:00.` };
  // Whole seconds: the pattern has no milliseconds.
  const local = parsed
    .setZone(tz)
    .startOf('second')
    .plus({ seconds: parsed.millisecond > 0 ? 1 : 0 });
  const at = local.toMillis();
  if (at <= options.now) return { ok: false, error: `${describeTime(at, tz)} has already passed (it is now ${describeTime(options.now, tz)}).` };
  const pattern = `${local.second} ${local.minute} ${local.hour} ${local.day} ${local.month} *`;
  return { ok: true, spec: { kind: 'once', pattern, tz, at }, next: [at] };
}

function cron(text: string, tz: string, options: WhenOptions): WhenResult {
  const fields = text.split(/\s+/).length;
  if (fields < 5 || fields > 6) {
    return {
      ok: false,
      error: `"${text}" is neither a cron expression (5 fields: minute hour day month weekday, or 6 with seconds first) nor an ISO 8601 date-time.`,
    };
  }
  let next: number[];
  try {
    next = nextFirings(text, tz, options.now, SAMPLED);
  } catch (err) {
    return { ok: false, error: `"${text}" is not a valid cron expression: ${err instanceof Error ? err.message : String(err)}.` };
  }
  if (next.length === 0) return { ok: false, error: `"${text}" never fires.` };
  const gaps = next.slice(1).map((t, i) => t - next[i]!);
  const shortest = Math.min(...gaps);
  if (gaps.length > 0 && shortest < options.minIntervalMs) {
    return {
      ok: false,
      error: `"${text}" fires every ${Math.round(shortest / 1000)} s; schedules may fire at most every ${Math.round(options.minIntervalMs / 1000)} s.`,
    };
  }
  return { ok: true, spec: { kind: 'cron', pattern: text, tz }, next };
}

/** The next `count` firings of a cron pattern in `tz` after `from`, by the cron library BullMQ uses. */
export function nextFirings(pattern: string, tz: string, from: number, count: number): number[] {
  const interval = CronExpressionParser.parse(pattern, { tz, currentDate: new Date(from) });
  const out: number[] = [];
  for (let i = 0; i < count && interval.hasNext(); i++) out.push(interval.next().getTime());
  return out;
}

/** "Mon 7 Dec 2026, 09:00 Europe/Berlin" — a firing as a person in that timezone reads it. */
export function describeTime(ms: number, tz: string): string {
  const t = DateTime.fromMillis(ms, { zone: tz });
  return `${t.toFormat(t.second === 0 ? 'ccc d LLL yyyy, HH:mm' : 'ccc d LLL yyyy, HH:mm:ss')} ${tz}`;
}
