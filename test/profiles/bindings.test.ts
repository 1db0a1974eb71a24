import { describe, expect, it } from 'vitest';
import { decideAgent, findTies, normaliseBinding, placeOf, type Binding } from '../../src/profiles/bindings.js';
import type { InboundMessage } from '../../src/channels/types.js';

const message = (over: Partial<InboundMessage>): InboundMessage => ({
  v: 1,
  id: 'm1',
  platform: 'slack',
  conversation: 'C1',
  sender: { id: 'U1' },
  text: 'hi',
  attachments: [],
  eventId: 'e1',
  receivedAt: 0,
  ...over,
});

const ISSUE_BINDINGS: Binding[] = (
  [
    { platform: 'slack', channel: 'C0123SUPPORT', agent: 'support' },
    { platform: 'slack', channel: 'C0123SUPPORT', user: 'U0BOSS', agent: 'eng' },
    { platform: 'discord', guild: '1200000000000000001', agent: 'eng' },
    { platform: 'telegram', kind: 'dm', agent: 'default' },
  ] as Binding[]
).map(normaliseBinding);

const decide = (m: InboundMessage, bindings = ISSUE_BINDINGS) => decideAgent(bindings, 'fallback', placeOf(m));

describe('bindings: the most specific match wins', () => {
  it("routes the issue's example", () => {
    const support = message({ conversation: 'C0123SUPPORT', where: { kind: 'group', ids: ['C0123SUPPORT'] } });
    expect(decide(support)).toBe('support');
    expect(decide({ ...support, sender: { id: 'U0BOSS' } })).toBe('eng');
    expect(
      decide(
        message({
          platform: 'discord',
          conversation: '42',
          where: { kind: 'group', ids: ['42', '1200000000000000001'] },
          meta: { guildId: '1200000000000000001' },
        }),
      ),
    ).toBe('eng');
    expect(decide(message({ platform: 'telegram', conversation: '7', where: { kind: 'dm' } }))).toBe('default');
    // Nothing matches: the default answers.
    expect(decide(message({ conversation: 'C999', where: { kind: 'group', ids: ['C999'] } }))).toBe('fallback');
    expect(decide(message({ platform: 'telegram', conversation: '-100', where: { kind: 'group', ids: ['-100'] } }))).toBe('fallback');
  });

  it('a Discord thread follows its parent channel, and its own binding beats the parent one', () => {
    const inThread = message({ platform: 'discord', conversation: 'T1', where: { kind: 'group', ids: ['T1', 'P1', 'G1'] }, meta: { guildId: 'G1' } });
    expect(decide(inThread, [{ channel: 'P1', agent: 'parent' }])).toBe('parent');
    expect(
      decide(inThread, [
        { channel: 'P1', agent: 'parent' },
        { channel: 'T1', agent: 'thread' },
      ]),
    ).toBe('thread');
    expect(
      decide(inThread, [
        { channel: 'T1', agent: 'thread' },
        { channel: 'P1', agent: 'parent' },
      ]),
    ).toBe('thread');
  });

  it('a Slack team binding and a guild binding only match their platform', () => {
    const bindings = [
      { team: 'T1', agent: 'team' },
      { guild: 'G1', agent: 'guild' },
    ].map(normaliseBinding);
    expect(decide(message({ meta: { team: 'T1' } }), bindings)).toBe('team');
    expect(decide(message({ platform: 'telegram', meta: { team: 'T1' } }), bindings)).toBe('fallback');
    expect(decide(message({ platform: 'discord', meta: { guildId: 'G1' }, where: { kind: 'group', ids: ['c', 'G1'] } }), bindings)).toBe('guild');
  });

  it('the order of the file does not decide', () => {
    const m = message({ conversation: 'C0123SUPPORT', sender: { id: 'U0BOSS' }, where: { kind: 'group', ids: ['C0123SUPPORT'] } });
    expect(decide(m, [...ISSUE_BINDINGS].reverse())).toBe('eng');
  });
});

describe('bindings: ties are found at start', () => {
  it('two equally specific bindings one message can match both of are a tie', () => {
    const ties = findTies([
      { platform: 'slack', channel: 'C1', agent: 'a' },
      { platform: 'slack', user: 'U1', agent: 'b' },
    ]);
    expect(ties).toHaveLength(1);
    expect(ties[0]).toMatch(
      /bindings\[0\] \(agent "a"\) and bindings\[1\] \(agent "b"\) are equally specific and both match a message with platform slack, channel C1, user U1/,
    );
  });

  it('a more specific binding for exactly that case settles it', () => {
    expect(
      findTies([
        { platform: 'slack', channel: 'C1', agent: 'a' },
        { platform: 'slack', user: 'U1', agent: 'b' },
        { platform: 'slack', channel: 'C1', user: 'U1', agent: 'c' },
      ]),
    ).toEqual([]);
  });

  it('bindings no message can match both of, or naming one agent, are no tie', () => {
    expect(findTies(ISSUE_BINDINGS)).toEqual([]);
    expect(
      findTies([
        { channel: 'C1', agent: 'a' },
        { channel: 'C2', agent: 'b' },
      ]),
    ).toEqual([]);
    expect(
      findTies([
        { kind: 'dm', agent: 'a' },
        { kind: 'dm', agent: 'a' },
      ]),
    ).toEqual([]);
    expect(
      findTies([
        { kind: 'dm', agent: 'a' },
        { kind: 'dm', agent: 'b' },
      ]),
    ).toHaveLength(1);
    expect(findTies([normaliseBinding({ team: 'T', agent: 'a' }), normaliseBinding({ guild: 'G', agent: 'b' })])).toEqual([]);
  });
});
