import type { AgentEvent, ChatMessage } from '../agent/types.js';
import type { InboundMessage, OutboundAdapter } from '../channels/types.js';
import type { MemoryEntry } from '../memory/entry.js';
import { channelOwner } from '../memory/identity.js';
import { memoryMessage } from '../memory/prompt.js';
import type { MemoryOwner } from '../memory/store.js';
import { createMemoryTools, MEMORY_TOOLS, type TurnMemoryOwners } from '../memory/tools.js';
import { channelOf } from '../profiles/bindings.js';
import type { Tool } from '../tools/types.js';
import type { AgentRuntime } from './agent-runtime.js';
import type { RunContext } from './context.js';

/** What memory adds to a turn: the asker's memory block (history side, never stored), the tools, and the taint watch. */
export interface TurnMemory {
  message?: ChatMessage;
  tools: Tool[];
  /** Every loop event: a tool result other than memory's own makes a later `remember` derived. */
  onEvent(event: AgentEvent): void;
}

/**
 * The memory of one turn, the asker's and nobody else's: the person who sent the turn's message
 * (a turn answers one person; a scheduled turn's sender is the schedule's owner), through the
 * operator's identity links, in this agent's namespace; under person+channel also the channel's
 * shared memory (in groups). Undefined when memory is off for this agent.
 */
export async function turnMemory(
  ctx: RunContext,
  agent: AgentRuntime,
  to: InboundMessage,
  query: string,
  history: readonly ChatMessage[],
  out: OutboundAdapter,
): Promise<TurnMemory | undefined> {
  const memory = ctx.deps.memory;
  const mode = agent.profile.memory ?? memory?.mode ?? 'off';
  if (!memory || mode === 'off') return undefined;
  const name = agent.profile.name;
  const person: MemoryOwner = { agent: name, owner: await memory.identities.personOf(to.platform, to.sender.id) };
  const inGroup = (to.where?.kind ?? 'dm') === 'group';
  const owners: TurnMemoryOwners = {
    person,
    ...(mode === 'person+channel' && inGroup && { channel: { agent: name, owner: channelOwner(to.platform, channelOf(to)) } }),
  };
  const access = { store: memory.store, ...(memory.embedder && { embedder: memory.embedder }), log: ctx.log };
  // Anything but the person's own words in the context (history included) makes a memory derived.
  let tainted = history.some((m) => m.role === 'tool');
  const tools = createMemoryTools(access, owners, {
    provenance: () => (tainted ? 'derived' : 'said'),
    onPending: async (entry: MemoryEntry, who: MemoryOwner) => {
      ctx.log.info({ memory: entry.id, owner: who.owner }, 'a derived memory waits for the person to keep it');
      await memory.askToKeep?.(out, to, entry, who);
    },
  });
  const message = await memoryMessage(access, owners, query, memory.promptTokens, to.sender.name ?? to.sender.id);
  return {
    ...(message && { message }),
    tools,
    onEvent(event) {
      if (event.type === 'tool_end' && !(MEMORY_TOOLS as readonly string[]).includes(event.name)) tainted = true;
    },
  };
}
