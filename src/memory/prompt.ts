import type { ChatMessage } from '../agent/types.js';
import { asData } from '../agent/untrusted.js';
import { searchMemory, type MemoryAccess, type TurnMemoryOwners } from './search.js';

/**
 * Memory is dense (names, hosts, numbers): about three characters a token in o200k_base, where the
 * loop's estimate assumes four. Counted this way the block stays within MEMORY_PROMPT_TOKENS.
 */
const blockTokens = (text: string): number => Math.ceil(text.length / 3);

/**
 * The memory a turn's prompt carries: the asker's kept entries most relevant to the new message
 * (then the most recently used), and the channel's shared ones, up to `maxTokens` — as data in a
 * user-side message, never in the system message. Absent when nothing is remembered. The entries
 * shown are marked used.
 */
export async function memoryMessage(
  access: MemoryAccess,
  owners: TurnMemoryOwners,
  query: string,
  maxTokens: number,
  asker: string,
): Promise<ChatMessage | undefined> {
  const groups = [
    { who: owners.person, title: `About ${asker} (their own memory; ids in brackets):` },
    ...(owners.channel ? [{ who: owners.channel, title: 'Shared by everyone in this channel:' }] : []),
  ];
  const ranked = await searchMemory(access, owners, query);
  if (ranked.length === 0) return undefined;
  // The block's frame (the data envelope, the titles) is paid too; what is left goes to entries.
  let left = maxTokens - blockTokens(asData('memory', groups.map((g) => g.title).join('\n')));
  const chosen: typeof ranked = [];
  for (const entry of ranked) {
    const cost = blockTokens(`- [${entry.id}] ${entry.text}\n`);
    if (cost > left) continue;
    chosen.push(entry);
    left -= cost;
  }
  if (chosen.length === 0) return undefined;
  const lines: string[] = [];
  for (const g of groups) {
    const mine = chosen.filter((e) => e.who === g.who);
    if (mine.length === 0) continue;
    lines.push(g.title, ...mine.map((e) => `- [${e.id}] ${e.text}`));
    await access.store.touch(
      g.who,
      mine.map((e) => e.id),
    );
  }
  return { role: 'user', content: asData('memory', lines.join('\n')) };
}
