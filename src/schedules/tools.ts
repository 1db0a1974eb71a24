import { z } from 'zod';
import type { InboundMessage } from '../channels/types.js';
import { sessionKeyOf } from '../channels/session-key.js';
import type { ScheduleBook } from './schedule-book.js';
import { scheduleList } from './describe.js';
import { describeTime, nextFirings } from './when.js';
import { ToolError, type Tool } from '../tools/types.js';

/** The schedule tools' names (what /agent lists without building them). */
export const SCHEDULE_TOOL_NAMES = ['schedule_task', 'list_schedules', 'cancel_schedule'] as const;

export interface ScheduleToolContext {
  /** The turn's message: its conversation is where schedules are made, its sender who makes them. */
  from: InboundMessage;
  /** SCHEDULE_TZ: the timezone when the model gives none. */
  defaultTz: string | undefined;
  /** `platform:userId` entries of APPROVERS: they may also remove others' schedules in a group. */
  approvers: readonly string[];
}

const scheduleSchema = z.object({
  when: z
    .string()
    .min(1)
    .describe(
      'A cron expression for a recurring task (minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5" = weekdays at 9:00) or an ISO 8601 date-time for a one-off (e.g. "2026-12-24T09:00")',
    ),
  timezone: z.string().optional().describe('The IANA timezone the person means, e.g. "Europe/Berlin". Ask them when you do not know it'),
  prompt: z
    .string()
    .min(1)
    .max(4_000)
    .describe('What to do at each firing, written as a request to you (it is given to you then as a new message in this conversation)'),
  name: z.string().max(80).optional().describe('A short name for the list, e.g. "weekday notes summary"'),
});
const cancelSchema = z.object({ id: z.string().min(1).max(32).describe('The schedule id, as list_schedules shows it') });
const listSchema = z.object({});

/** schedule_task, list_schedules and cancel_schedule for one turn's conversation. A scheduled turn cannot make new schedules. */
export function createScheduleTools(book: ScheduleBook, ctx: ScheduleToolContext): Tool[] {
  const session = sessionKeyOf(ctx.from);
  const defaultNote = ctx.defaultTz ? ` When no timezone is given, ${ctx.defaultTz} is used.` : ' A timezone is required.';
  const scheduleTask: Tool<typeof scheduleSchema> = {
    name: SCHEDULE_TOOL_NAMES[0],
    description: `Schedule a task in this conversation, once or repeatedly: at each firing the prompt is given to you as a new request here and your answer is posted here. At most ${book.perUser} schedules per person.${defaultNote}`,
    schema: scheduleSchema,
    async execute(args) {
      if (ctx.from.scheduled)
        throw new ToolError('A scheduled run cannot create schedules; tell the person in the answer if a new schedule is needed, so they can ask for it.');
      const created = await book.create(ctx.from, { when: args.when, timezone: args.timezone ?? ctx.defaultTz, prompt: args.prompt, name: args.name });
      if (!created.ok) throw new ToolError(created.error);
      const s = created.schedule;
      const upcoming =
        s.spec.kind === 'cron'
          ? nextFirings(s.spec.pattern, s.spec.tz, Date.now(), 3).map((t) => describeTime(t, s.spec.tz))
          : [describeTime(s.spec.at, s.spec.tz)];
      return `Scheduled ${s.id} "${s.name}" (${s.spec.kind === 'once' ? 'once' : `cron "${s.spec.pattern}"`}, ${s.spec.tz}). Next firing${upcoming.length > 1 ? 's' : ''}: ${upcoming.join('; ')}. It answers in this conversation; /unschedule ${s.id} removes it.`;
    },
  };
  const listSchedules: Tool<typeof listSchema> = {
    name: SCHEDULE_TOOL_NAMES[1],
    readOnly: true,
    description: 'List the schedules of this conversation: id, name, when, next firing in its timezone.',
    schema: listSchema,
    async execute() {
      return scheduleList(await book.ofSession(session));
    },
  };
  const cancelSchedule: Tool<typeof cancelSchema> = {
    name: SCHEDULE_TOOL_NAMES[2],
    description: 'Remove a schedule of this conversation by its id (list_schedules shows the ids).',
    schema: cancelSchema,
    async execute({ id }) {
      const result = await book.cancel(id, ctx.from, ctx.approvers);
      if (result.outcome === 'not_found') throw new ToolError(`No schedule "${id}" in this conversation (list_schedules shows them).`);
      if (result.outcome === 'not_yours') throw new ToolError(`Schedule ${id} was made by someone else; only they (or an approver) can remove it.`);
      return `Removed ${id} "${result.schedule!.name}": it will not fire again.`;
    },
  };
  return [scheduleTask, listSchedules, cancelSchedule];
}
