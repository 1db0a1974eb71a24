import { describe, expect, it } from 'vitest';
import { describeTime, nextFirings, parseWhen } from '../../src/schedules/when.js';

const MIN = { minIntervalMs: 60_000 };
const iso = (ms: number[]) => ms.map((t) => new Date(t).toISOString());

describe('parseWhen: cron expressions and one-off times in a timezone', () => {
  it('a daily 9:00 in Berlin moves by an hour in UTC across the end of summer time (computed by the cron library)', () => {
    const r = parseWhen('0 9 * * *', 'Europe/Berlin', { now: Date.parse('2026-10-23T12:00:00Z'), ...MIN });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.spec).toEqual({ kind: 'cron', pattern: '0 9 * * *', tz: 'Europe/Berlin' });
    // 2026-10-25 03:00 CEST → 02:00 CET.
    expect(iso(r.next.slice(0, 3))).toEqual(['2026-10-24T07:00:00.000Z', '2026-10-25T08:00:00.000Z', '2026-10-26T08:00:00.000Z']);
  });

  it('New York weekdays at 9:00 across the start of daylight time', () => {
    const next = nextFirings('0 9 * * 1-5', 'America/New_York', Date.parse('2026-03-06T00:00:00Z'), 3);
    // Fri 6 Mar (EST, UTC-5), then Mon 9 Mar after the 8 Mar switch (EDT, UTC-4).
    expect(iso(next)).toEqual(['2026-03-06T14:00:00.000Z', '2026-03-09T13:00:00.000Z', '2026-03-10T13:00:00.000Z']);
  });

  it('a one-off local time becomes the instant of that wall-clock time in its zone, and a pattern for that second', () => {
    const r = parseWhen('2026-12-24T09:00', 'Europe/Berlin', { now: Date.parse('2026-12-01T00:00:00Z'), ...MIN });
    expect(r).toEqual({
      ok: true,
      spec: { kind: 'once', pattern: '0 0 9 24 12 *', tz: 'Europe/Berlin', at: Date.parse('2026-12-24T08:00:00Z') },
      next: [Date.parse('2026-12-24T08:00:00Z')],
    });
  });

  it('a one-off with its own offset keeps that instant; the pattern is its wall clock in the schedule’s zone', () => {
    const r = parseWhen('2026-10-23T13:00:00Z', 'America/New_York', { now: Date.parse('2026-10-23T12:00:00Z'), ...MIN });
    expect(r.ok && r.spec).toEqual({ kind: 'once', pattern: '0 0 9 23 10 *', tz: 'America/New_York', at: Date.parse('2026-10-23T13:00:00Z') });
  });

  it('refuses without a timezone, asking for one, and names a wrong one', () => {
    const none = parseWhen('0 9 * * *', undefined, { now: 0, ...MIN });
    expect(none.ok).toBe(false);
    expect(!none.ok && none.error).toMatch(/A timezone is needed .* ask the person which timezone/);
    const blank = parseWhen('0 9 * * *', '  ', { now: 0, ...MIN });
    expect(blank.ok).toBe(false);
    const wrong = parseWhen('0 9 * * *', 'Mars/Olympus', { now: 0, ...MIN });
    expect(!wrong.ok && wrong.error).toMatch(/"Mars\/Olympus" is not an IANA timezone/);
  });

  it('refuses a time that has passed, a bad date, a bad cron, one that fires too often, one that never fires', () => {
    const now = Date.parse('2026-12-01T12:00:00Z');
    const cases: [string, RegExp][] = [
      ['2026-11-30T09:00', /has already passed \(it is now Tue 1 Dec 2026, 13:00 Europe\/Berlin\)/],
      ['2026-13-40T09:00', /is not an ISO 8601 date-time/],
      ['61 * * * *', /is not a valid cron expression/],
      ['every day at nine', /neither a cron expression .* nor an ISO 8601 date-time/],
      ['* * * * *', /fires every 60 s; schedules may fire at most every 120 s/],
      ['0 9 30 2 *', /not a valid cron expression|never fires/],
    ];
    for (const [when, error] of cases) {
      const r = parseWhen(when, 'Europe/Berlin', { now, minIntervalMs: 120_000 });
      expect(r.ok, when).toBe(false);
      expect(!r.ok && r.error, when).toMatch(error);
    }
  });

  it('seconds-level cron is accepted when the floor allows it', () => {
    const r = parseWhen('*/2 * * * * *', 'UTC', { now: Date.parse('2026-12-01T12:00:00.500Z'), minIntervalMs: 1_000 });
    expect(r.ok && iso(r.next.slice(0, 2))).toEqual(['2026-12-01T12:00:02.000Z', '2026-12-01T12:00:04.000Z']);
  });

  it('describes a time as a person in that zone reads it', () => {
    expect(describeTime(Date.parse('2026-07-01T07:00:00Z'), 'Europe/Berlin')).toBe('Wed 1 Jul 2026, 09:00 Europe/Berlin');
    expect(describeTime(Date.parse('2026-12-07T08:00:05Z'), 'UTC')).toBe('Mon 7 Dec 2026, 08:00:05 UTC');
  });
});
