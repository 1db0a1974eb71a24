import type { ChatMessage } from '../agent/types.js';
import { asData } from '../agent/untrusted.js';
import { rankEntries } from './rank.js';
import type { MemoryStore } from './store.js';
import type { TurnMemoryOwners } from './tools.js';

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
  store: MemoryStore,
  owners: TurnMemoryOwners,
  query: string,
  maxTokens: number,
  asker: string,
): Promise<ChatMessage | undefined> {
  const groups = [
    { who: owners.person, title: `About ${asker} (their own memory; ids in brackets):` },
    ...(owners.channel ? [{ who: owners.channel, title: 'Shared by everyone in this channel:' }] : []),
  ];
  const listed = await Promise.all(groups.map(async (g) => ({ ...g, entries: (await store.list(g.who)).filter((e) => e.state === 'kept') })));
  const candidates = listed.flatMap((g) => g.entries.map((entry) => ({ ...entry, group: g })));
  if (candidates.length === 0) return undefined;
  // The block's frame (the data envelope, the titles) is paid too; what is left goes to entries.
  let left = maxTokens - blockTokens(asData('memory', listed.map((g) => g.title).join('\n')));
  const chosen: typeof candidates = [];
  for (const { entry } of rankEntries(candidates, query)) {
    const cost = blockTokens(`- [${entry.id}] ${entry.text}\n`);
    if (cost > left) continue;
    chosen.push(entry);
    left -= cost;
  }
  if (chosen.length === 0) return undefined;
  const lines: string[] = [];
  for (const g of listed) {
    const mine = chosen.filter((e) => e.group === g);
    if (mine.length === 0) continue;
    lines.push(g.title, ...mine.map((e) => `- [${e.id}] ${e.text}`));
    await store.touch(
      g.who,
      mine.map((e) => e.id),
    );
  }
  return { role: 'user', content: asData('memory', lines.join('\n')) };
}
