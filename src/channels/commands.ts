/** Chat commands every channel understands. Platforms register them where they can (Telegram, Discord, Slack). */
export const COMMANDS = {
  help: 'what I am and what I can do',
  reset: 'forget this conversation and start fresh',
  stop: 'cancel the run that is working now',
  status: 'is a run active, what is queued, how the last run ended',
  agent: 'which agent answers here: its model, tools, skills and MCP servers',
  memory: 'what I remember about you (shown only to you)',
  forget: 'forget something I remember about you: /forget <number> or /forget all',
  schedules: 'list the scheduled tasks of this conversation',
  unschedule: 'remove a scheduled task: /unschedule <id>',
} as const;

export type CommandName = keyof typeof COMMANDS;

export type ParsedCommand = { name: CommandName; args: string } | { unknown: string };

/**
 * `/name args` or `/name@botname args` at the start of a message; null when the text is not a
 * command. `botName`, when given, rejects commands addressed to another bot (a group's `/stop@other`).
 */
export function parseCommand(text: string, botName?: string): ParsedCommand | null {
  const match = /^\/([A-Za-z][\w-]*)(?:@(\S+))?(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!match) return null;
  const [, raw, addressee, args = ''] = match;
  if (addressee && botName && addressee.toLowerCase() !== botName.toLowerCase()) return null;
  const name = raw!.toLowerCase();
  return Object.hasOwn(COMMANDS, name) ? { name: name as CommandName, args: args.trim() } : { unknown: name };
}

export function helpText(): string {
  const lines = Object.entries(COMMANDS).map(([name, what]) => `/${name} — ${what}`);
  return [
    'I am Switchboard, an assistant that works with files in a workspace of this conversation: I can list, read, search, write and edit them, and I tell you what I am doing while I work. I can also do something later or regularly ("every weekday at 9:00, summarise yesterday\'s notes"): say the time and timezone.',
    'Just write your request. Commands:',
    ...lines,
  ].join('\n');
}

export function unknownCommandText(name: string): string {
  return `Unknown command /${name}. Commands: ${Object.keys(COMMANDS)
    .map((c) => `/${c}`)
    .join(', ')}.`;
}
