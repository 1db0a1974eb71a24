import type { InboundMessage } from './types.js';

/**
 * A session key is `platform:conversation[:thread]`, each part percent-encoded so a part never
 * contains ':'. The same string names the session's Redis keys, its job de-duplication id and
 * (through workspaceFolderName) its workspace folder.
 */
export interface SessionParts {
  platform: string;
  conversation: string;
  thread?: string;
}

const enc = (part: string): string => encodeURIComponent(part);

export function encodeSessionKey(parts: SessionParts): string {
  if (!parts.platform || !parts.conversation) throw new Error('a session key needs a platform and a conversation');
  const base = `${enc(parts.platform)}:${enc(parts.conversation)}`;
  return parts.thread ? `${base}:${enc(parts.thread)}` : base;
}

export function decodeSessionKey(key: string): SessionParts {
  const parts = key.split(':');
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => p === '')) throw new Error(`not a session key: ${key}`);
  const [platform, conversation, thread] = parts.map(decodeURIComponent) as [string, string, string | undefined];
  return thread === undefined ? { platform, conversation } : { platform, conversation, thread };
}

export function sessionKeyOf(message: Pick<InboundMessage, 'platform' | 'conversation' | 'thread'>): string {
  return encodeSessionKey(message);
}
