import { COMMANDS } from '../commands.js';
import type { DiscordRest } from './rest.js';

/** Application command option type STRING, command type CHAT_INPUT, contexts GUILD and BOT_DM, install type GUILD_INSTALL. */
const STRING = 3;
const CHAT_INPUT = 1;

export interface SlashOption {
  type: number;
  name: string;
  description: string;
  required?: boolean;
  max_length?: number;
}

export interface SlashCommand {
  type: number;
  name: string;
  description: string;
  options?: SlashOption[];
  contexts: number[];
  integration_types: number[];
}

const command = (name: string, description: string, options?: SlashOption[]): SlashCommand => ({
  type: CHAT_INPUT,
  name,
  description,
  ...(options && { options }),
  contexts: [0, 1],
  integration_types: [0],
});

/** /ask prompt:<text>, and the chat commands every channel understands. */
export const SLASH_COMMANDS: readonly SlashCommand[] = [
  command('ask', 'Ask Switchboard to do something; it answers here', [
    { type: STRING, name: 'prompt', description: 'What you want done or answered', required: true, max_length: 4000 },
  ]),
  command('reset', COMMANDS.reset),
  command('stop', COMMANDS.stop),
  command('status', COMMANDS.status),
  command('help', COMMANDS.help),
  command('agent', COMMANDS.agent),
  command('memory', COMMANDS.memory),
  command('forget', COMMANDS.forget, [{ type: STRING, name: 'what', description: 'The number /memory shows, or all', required: true, max_length: 32 }]),
  command('schedules', COMMANDS.schedules),
  command('unschedule', COMMANDS.unschedule, [
    { type: STRING, name: 'id', description: 'The schedule id, as /schedules shows it', required: true, max_length: 32 },
  ]),
];

/** The fields we set, as Discord returns them (it fills in ids, versions and defaults we ignore). */
function comparable(c: Partial<SlashCommand>): string {
  const options = (c.options ?? []).map((o) => ({
    type: o.type,
    name: o.name,
    description: o.description,
    required: o.required ?? false,
    max_length: o.max_length ?? null,
  }));
  return JSON.stringify({
    type: c.type ?? CHAT_INPUT,
    name: c.name,
    description: c.description,
    options,
    contexts: [...(c.contexts ?? [])].sort(),
    integration_types: [...(c.integration_types ?? [])].sort(),
  });
}

/** True when the registered commands already are `wanted` (same set, same definitions). */
export function sameCommands(registered: readonly Partial<SlashCommand>[], wanted: readonly SlashCommand[]): boolean {
  const a = registered.map(comparable).sort();
  const b = wanted.map(comparable).sort();
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Registers the slash commands (in one guild when `guildId` is set: they appear at once there;
 * else globally). Idempotent: the registered set is read first and overwritten only if it differs.
 */
export async function registerCommands(rest: DiscordRest, applicationId: string, guildId: string | undefined): Promise<'unchanged' | 'updated'> {
  const path = guildId ? `/applications/${applicationId}/guilds/${guildId}/commands` : `/applications/${applicationId}/commands`;
  const registered = await rest.request<Partial<SlashCommand>[]>('GET', path);
  if (sameCommands(registered, SLASH_COMMANDS)) return 'unchanged';
  await rest.request('PUT', path, { body: SLASH_COMMANDS });
  return 'updated';
}
