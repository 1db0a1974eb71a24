import { z } from 'zod';
import { ToolError, type Tool } from '../tools/types.js';
import { MEMORY_TEXT_MAX, type MemoryEntry, type Provenance } from './entry.js';
import { embedEntry, searchMemory, type MemoryAccess, type TurnMemoryOwners } from './search.js';
import type { MemoryOwner } from './store.js';

/** The memory tools' names (a turn that ran only these has read no tool result). */
export const MEMORY_TOOLS = ['remember', 'recall', 'forget'] as const;

export type { TurnMemoryOwners } from './search.js';

export interface MemoryToolOptions {
  /** `derived` once the turn's context holds a tool result (read at each call). */
  provenance(): Provenance;
  /** A derived entry waits for the person's Keep: show them the card (the run does not wait). */
  onPending(entry: MemoryEntry, who: MemoryOwner): Promise<void>;
}

const RECALL_MAX = 10;

const rememberSchema = z.object({
  text: z.string().trim().min(1).max(MEMORY_TEXT_MAX).describe('One short fact, in the third person or as the person said it'),
  shared: z.boolean().optional().describe('Remember it for everyone in this channel instead of for this person'),
});
const recallSchema = z.object({ query: z.string().trim().min(1).describe('What to look for') });
const forgetSchema = z.object({ id: z.string().trim().min(1).describe('The id in brackets') });

/**
 * remember / recall / forget over the asker's memory (and the channel's, when shared). Each tool
 * is bound to the owners of this turn: no argument can name another person.
 */
export function createMemoryTools(access: MemoryAccess, owners: TurnMemoryOwners, options: MemoryToolOptions): Tool[] {
  const { store } = access;
  const all = owners.channel ? [owners.person, owners.channel] : [owners.person];
  const remember: Tool<typeof rememberSchema> = {
    name: 'remember',
    description: `Remember a fact about the person for later conversations (≤ ${MEMORY_TEXT_MAX} characters). Only what they asked you to remember or clearly want kept.`,
    schema: rememberSchema,
    async execute({ text, shared }) {
      if (shared && !owners.channel) throw new ToolError('there is no shared channel memory here; remember it for the person instead');
      const who = shared ? owners.channel! : owners.person;
      const provenance = options.provenance();
      const result = await store.remember(who, text, provenance);
      const { entry } = result;
      if (result.kind === 'added') await embedEntry(access, who, entry.id, entry.text);
      if (entry.state === 'pending') {
        if (result.kind === 'added') await options.onPending(entry, who);
        return `Not remembered yet [${entry.id}]: this turn read tool results, so the person was asked to confirm it (Keep / Discard). Tell them.`;
      }
      return result.kind === 'known'
        ? `Already remembered [${entry.id}]: ${entry.text}`
        : `Remembered [${entry.id}]${shared ? ' for everyone in this channel' : ''}: ${entry.text}`;
    },
  };
  const recall: Tool<typeof recallSchema> = {
    name: 'recall',
    readOnly: true,
    description: 'Search what you remember about the person (and this channel, if shared).',
    schema: recallSchema,
    async execute({ query }) {
      const ranked = (await searchMemory(access, owners, query)).slice(0, RECALL_MAX);
      if (ranked.length === 0) return 'Nothing remembered yet.';
      for (const who of all)
        await store.touch(
          who,
          ranked.filter((e) => e.who === who).map((e) => e.id),
        );
      return ranked.map((entry) => `- [${entry.id}]${entry.shared ? ' (shared in this channel)' : ''} ${entry.text}`).join('\n');
    },
  };
  const forget: Tool<typeof forgetSchema> = {
    name: 'forget',
    description: 'Forget one remembered fact by its id.',
    schema: forgetSchema,
    async execute({ id }) {
      for (const who of all) if (await store.forget(who, id)) return `Forgot [${id}].`;
      throw new ToolError(`nothing remembered has the id ${id}`);
    },
  };
  return [remember, recall, forget];
}
