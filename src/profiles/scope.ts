import { encodeSessionKey } from '../channels/session-key.js';
import type { InboundMessage } from '../channels/types.js';
import { channelOf } from './bindings.js';
import type { AgentProfile } from './roster.js';

/**
 * The workspace scope key of a turn: what `Workspace.forScope` turns into a folder. `session`
 * keeps today's folder (the session key); the others are named by the agent too, so two agents
 * in one channel never share files unless they name the same `shared:` folder. A Discord thread's
 * channel is its parent channel, as for bindings.
 */
export function workspaceScope(
  profile: Pick<AgentProfile, 'name' | 'workspace'>,
  session: string,
  asker: Pick<InboundMessage, 'platform' | 'conversation' | 'sender' | 'where' | 'meta'>,
): string {
  const scope = profile.workspace;
  if (scope === 'session') return session;
  if (scope === 'channel') return `channel:${profile.name}:${encodeSessionKey({ platform: asker.platform, conversation: channelOf(asker) })}`;
  if (scope === 'user') return `user:${profile.name}:${encodeSessionKey({ platform: asker.platform, conversation: asker.sender.id })}`;
  return scope;
}
