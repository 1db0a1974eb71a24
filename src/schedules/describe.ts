import type { ScheduleView } from './schedule-book.js';
import { describeTime } from './when.js';

/** One line per schedule, as /schedules and list_schedules show it: id, name, when, next firing in its timezone. */
export function scheduleLine(s: ScheduleView): string {
  const when = s.spec.kind === 'once' ? `once, ${describeTime(s.spec.at, s.spec.tz)}` : `cron "${s.spec.pattern}" in ${s.spec.tz}`;
  const state =
    s.state === 'paused'
      ? `paused${s.pausedBy === 'failures' ? ` after ${s.failures} failed firings in a row` : ' by an operator'}`
      : s.next !== undefined
        ? `next ${describeTime(s.next, s.spec.tz)}`
        : 'next firing not known';
  return `${s.id} · "${s.name}" · ${when} · ${state}`;
}

export function scheduleList(schedules: ScheduleView[]): string {
  if (schedules.length === 0)
    return 'No schedules in this conversation. Ask me to do something at a time or regularly ("every weekday at 9:00 …") to make one.';
  return [`Schedules in this conversation (${schedules.length}):`, ...schedules.map((s) => `- ${scheduleLine(s)}`), 'Remove one with /unschedule <id>.'].join(
    '\n',
  );
}
