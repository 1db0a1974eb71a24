import { describe, expect, it } from 'vitest';
import { decodeSessionKey, encodeSessionKey, sessionKeyOf, type SessionParts } from '../../src/channels/session-key.js';
import type { InboundMessage } from '../../src/channels/types.js';

const ROUND_TRIP: SessionParts[] = [
  { platform: 'terminal', conversation: 'alice' },
  { platform: 'telegram', conversation: '-1001234567890' },
  { platform: 'telegram', conversation: '-1001234567890', thread: '42' },
  { platform: 'slack', conversation: 'C0123ABCD', thread: '1712345678.000100' },
  { platform: 'slack', conversation: 'D0123', thread: '1712345678.000100' },
  { platform: 'discord', conversation: '112233445566778899', thread: '998877665544332211' },
  { platform: 'terminal', conversation: 'a:b' },
  { platform: 'terminal', conversation: 'a', thread: 'b' },
  { platform: 'terminal', conversation: 'x:y:z', thread: 'p:q' },
  { platform: 'terminal', conversation: '::::' },
  { platform: 'terminal', conversation: 'with spaces  and\ttabs' },
  { platform: 'terminal', conversation: 'percent %3A literal %' },
  { platform: 'terminal', conversation: 'ünïcödé 会话 🚀' },
  { platform: 'terminal', conversation: 'emoji', thread: '🧵 thread: one' },
  { platform: 'weird:platform', conversation: 'c' },
  { platform: 'terminal', conversation: 'slash/and?query=1&x#frag' },
  { platform: 'terminal', conversation: 'new\nline' },
];

describe('session keys', () => {
  it.each(ROUND_TRIP.map((p) => [JSON.stringify(p), p] as const))('round-trips %s', (_, parts) => {
    const key = encodeSessionKey(parts);
    expect(decodeSessionKey(key)).toEqual(parts);
    // Each part is encoded so the key has exactly one separator per part boundary.
    expect(key.split(':')).toHaveLength(parts.thread === undefined ? 2 : 3);
  });

  it('writes plain ids readably', () => {
    expect(encodeSessionKey({ platform: 'terminal', conversation: 'alice' })).toBe('terminal:alice');
    expect(encodeSessionKey({ platform: 'telegram', conversation: '-1001234567890' })).toBe('telegram:-1001234567890');
    expect(encodeSessionKey({ platform: 'slack', conversation: 'C0123', thread: '1712345678.000100' })).toBe('slack:C0123:1712345678.000100');
    expect(encodeSessionKey({ platform: 'terminal', conversation: 'a:b' })).toBe('terminal:a%3Ab');
    expect(encodeSessionKey({ platform: 'terminal', conversation: 'a b' })).toBe('terminal:a%20b');
  });

  it('gives different keys to different sessions that would collide without encoding', () => {
    const keys = new Set(ROUND_TRIP.map(encodeSessionKey));
    expect(keys.size).toBe(ROUND_TRIP.length);
    expect(encodeSessionKey({ platform: 'terminal', conversation: 'a:b' })).not.toBe(
      encodeSessionKey({ platform: 'terminal', conversation: 'a', thread: 'b' }),
    );
  });

  it('treats an empty thread as no thread', () => {
    expect(encodeSessionKey({ platform: 'slack', conversation: 'C1', thread: '' })).toBe('slack:C1');
    expect(decodeSessionKey('slack:C1')).toEqual({ platform: 'slack', conversation: 'C1' });
    expect('thread' in decodeSessionKey('slack:C1')).toBe(false);
  });

  it('refuses to encode without a platform or a conversation', () => {
    expect(() => encodeSessionKey({ platform: '', conversation: 'c' })).toThrow(/platform and a conversation/);
    expect(() => encodeSessionKey({ platform: 'p', conversation: '' })).toThrow(/platform and a conversation/);
  });

  it.each(['', 'terminal', 'terminal:', ':alice', 'a::c', 'a:b:', '::', 'a:b:c:d', 'slack:C1:1.2:extra'])('rejects the malformed key %j', (key) => {
    expect(() => decodeSessionKey(key)).toThrow(`not a session key: ${key}`);
  });

  it('rejects a key with broken percent-encoding', () => {
    expect(() => decodeSessionKey('terminal:%E0%A4%A')).toThrow(URIError);
    expect(() => decodeSessionKey('terminal:100%')).toThrow(URIError);
  });

  describe('sessionKeyOf', () => {
    const base: InboundMessage = {
      v: 1,
      id: 'm-1',
      platform: 'slack',
      conversation: 'C0123',
      thread: '1712345678.000100',
      sender: { id: 'U1', name: 'Ann' },
      text: 'hello',
      attachments: [],
      eventId: 'Ev1',
      receivedAt: 1_700_000_000_000,
      replyTo: '1712345679.000200',
    };

    it('derives the key from platform, conversation and thread only', () => {
      expect(sessionKeyOf(base)).toBe('slack:C0123:1712345678.000100');
      const other: InboundMessage = { ...base, id: 'm-2', sender: { id: 'U2' }, text: 'other', eventId: 'Ev2', receivedAt: 1, replyTo: 'x' };
      expect(sessionKeyOf(other)).toBe(sessionKeyOf(base));
    });

    it('a different thread, or no thread, is a different session', () => {
      expect(sessionKeyOf({ ...base, thread: '1712345680.000300' })).toBe('slack:C0123:1712345680.000300');
      const { thread: _thread, ...noThread } = base;
      expect(sessionKeyOf(noThread)).toBe('slack:C0123');
    });

    it('round-trips a Telegram group message with a negative chat id', () => {
      const key = sessionKeyOf({ platform: 'telegram', conversation: '-1009876543210', thread: '7' });
      expect(key).toBe('telegram:-1009876543210:7');
      expect(decodeSessionKey(key)).toEqual({ platform: 'telegram', conversation: '-1009876543210', thread: '7' });
    });
  });
});
