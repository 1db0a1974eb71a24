import { IANAZone } from 'luxon';

/** An IANA timezone name luxon (and so BullMQ's cron library) knows. */
export function isTimezone(name: string): boolean {
  return IANAZone.isValidZone(name);
}
