import { describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/channels/types.js';
import { parseCommand } from '../../src/channels/commands.js';
import { selectTurn, type ClaimedMessage } from '../../src/session/turn.js';

/**
 * Finding (medium): in a turn folded from several people's messages the last sender became the
 * requester (who may approve) and paid the budget. Now each person's messages are their own turn.
 * Finding (low): `/constructor` and `/toString` counted as commands (`name in COMMANDS`).
 */
function waiting(id: string, sender: string, platform = 'telegram'): ClaimedMessage {
  const message: InboundMessage = {
    v: 1,
    id,
    platform,
    conversation: '-100',
    sender: { id: sender },
    where: { kind: 'group', ids: ['-100'] },
    text: `from ${sender}`,
    attachments: [],
    eventId: id,
    receivedAt: 0,
  };
  return { message, raw: JSON.stringify(message), claims: 0 };
}

describe('security: a turn answers one person', () => {
  it('messages of different people waiting together are separate turns, in order', () => {
    const inbox = [waiting('1', 'mallory'), waiting('2', 'mallory'), waiting('3', 'ada'), waiting('4', 'mallory')];
    const first = selectTurn(inbox);
    expect(first.taken.map((c) => c.message.id)).toEqual(['1', '2']);
    const second = selectTurn(inbox.slice(2));
    expect(second.taken.map((c) => c.message.id)).toEqual(['3']);
    expect(selectTurn(inbox.slice(3)).taken.map((c) => c.message.id)).toEqual(['4']);
  });

  it('the same id on two platforms is two people', () => {
    expect(selectTurn([waiting('1', '42', 'telegram'), waiting('2', '42', 'discord')]).taken).toHaveLength(1);
  });
});

describe('security: only real commands are commands', () => {
  it('names that exist on every object are unknown commands, not commands', () => {
    for (const name of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(parseCommand(`/${name}`)).toEqual({ unknown: name.toLowerCase() });
    }
    expect(parseCommand('/stop')).toEqual({ name: 'stop', args: '' });
  });
});
