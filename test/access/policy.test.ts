import { describe, expect, it } from 'vitest';
import { parseEnv } from '../../src/config/load.js';
import { deriveConfig } from '../../src/config/config.js';
import { policyVerdict } from '../../src/access/policy.js';
import { CODE_ALPHABET, newPairingCode, normaliseCode } from '../../src/access/pairing-code.js';
import type { InboundMessage } from '../../src/channels/types.js';

const accessOf = (env: Record<string, string>) => deriveConfig(parseEnv(env)).access;

const dm = (platform: string, id: string, handle?: string): Pick<InboundMessage, 'platform' | 'sender' | 'where'> => ({
  platform,
  sender: { id, ...(handle && { handle }) },
  where: { kind: 'dm' },
});
const group = (platform: string, id: string, ids: string[]): Pick<InboundMessage, 'platform' | 'sender' | 'where'> => ({
  platform,
  sender: { id },
  where: { kind: 'group', ids },
});

describe('access policy', () => {
  it('defaults: every platform pairs unknown DM senders; groups are open (mention-gated by the channel)', () => {
    const access = accessOf({});
    expect(access.dm).toEqual({ telegram: 'pairing', slack: 'pairing', discord: 'pairing' });
    expect(policyVerdict(dm('slack', 'U1'), access)).toEqual({ allow: false, reason: 'pairing' });
    expect(policyVerdict(group('slack', 'U1', ['C1']), access)).toEqual({ allow: true });
  });

  it('DM_POLICY for all, a platform variable wins over it', () => {
    const access = accessOf({ DM_POLICY: 'disabled', DISCORD_DM_POLICY: 'open' });
    expect(access.dm).toEqual({ telegram: 'disabled', slack: 'disabled', discord: 'open' });
    expect(policyVerdict(dm('telegram', '1'), access)).toEqual({ allow: false, reason: 'dm_disabled' });
    expect(policyVerdict(dm('discord', '1'), access)).toEqual({ allow: true });
  });

  it('ALLOWED_USERS lets listed people in under pairing and allowlist, by id or Telegram username in any case; never under disabled', () => {
    const env = { ALLOWED_USERS: 'slack:U1, telegram:@Ada,telegram:42,discord:7' };
    const allowlist = accessOf({ ...env, DM_POLICY: 'allowlist' });
    expect(policyVerdict(dm('slack', 'U1'), allowlist).allow).toBe(true);
    expect(policyVerdict(dm('slack', 'U2'), allowlist)).toEqual({ allow: false, reason: 'not_allowed' });
    expect(policyVerdict(dm('telegram', '99', 'ada'), allowlist).allow).toBe(true);
    expect(policyVerdict(dm('telegram', '42'), allowlist).allow).toBe(true);
    // An id on one platform means nothing on another.
    expect(policyVerdict(dm('discord', 'U1'), allowlist).allow).toBe(false);
    expect(policyVerdict(dm('discord', '7'), accessOf(env)).allow).toBe(true);
    expect(policyVerdict(dm('slack', 'U1'), accessOf({ ...env, DM_POLICY: 'disabled' })).allow).toBe(false);
  });

  it('the legacy TELEGRAM_ALLOWED_USERS keeps its meaning: a Telegram DM allowlist that also restricts group senders', () => {
    const access = accessOf({ TELEGRAM_ALLOWED_USERS: '42, @Ada' });
    expect(access.dm.telegram).toBe('allowlist');
    expect(access.dm.slack).toBe('pairing');
    expect(policyVerdict(dm('telegram', '42'), access).allow).toBe(true);
    expect(policyVerdict(dm('telegram', '5', 'ada'), access).allow).toBe(true);
    expect(policyVerdict(dm('telegram', '43'), access)).toEqual({ allow: false, reason: 'not_allowed' });
    expect(policyVerdict(group('telegram', '43', ['-100']), access)).toEqual({ allow: false, reason: 'not_allowed' });
    expect(policyVerdict(group('telegram', '42', ['-100']), access).allow).toBe(true);
    // An explicit Telegram DM policy wins over the legacy default.
    expect(accessOf({ TELEGRAM_ALLOWED_USERS: '42', TELEGRAM_DM_POLICY: 'pairing' }).dm.telegram).toBe('pairing');
  });

  it('GROUP_POLICY=allowlist admits a group when any of its ids is listed (channel, thread parent, guild)', () => {
    const access = accessOf({ GROUP_POLICY: 'allowlist', ALLOWED_CHANNELS: 'slack:C1,telegram:-1001,discord:G1,discord:P2' });
    expect(policyVerdict(group('slack', 'U', ['C1']), access).allow).toBe(true);
    expect(policyVerdict(group('slack', 'U', ['C2']), access)).toEqual({ allow: false, reason: 'channel_not_allowed' });
    expect(policyVerdict(group('telegram', '1', ['-1001']), access).allow).toBe(true);
    expect(policyVerdict(group('discord', '1', ['X', 'G1']), access).allow).toBe(true);
    expect(policyVerdict(group('discord', '1', ['T', 'P2', 'G9']), access).allow).toBe(true);
    expect(policyVerdict(group('discord', '1', ['C1', 'G9']), access).allow).toBe(false);
    // DMs are the DM policy's business.
    expect(policyVerdict(dm('slack', 'U'), accessOf({ GROUP_POLICY: 'allowlist', DM_POLICY: 'open' })).allow).toBe(true);
  });

  it('a message that does not say where it was said is judged as a DM (the stricter rule)', () => {
    expect(policyVerdict({ platform: 'slack', sender: { id: 'U1' } }, accessOf({ DM_POLICY: 'allowlist' })).allow).toBe(false);
  });

  it('bad values are one line each', () => {
    expect(() => parseEnv({ DM_POLICY: 'everyone' })).toThrow(/DM_POLICY must be pairing, allowlist, open or disabled/);
    expect(() => parseEnv({ ALLOWED_USERS: 'U1' })).toThrow(/ALLOWED_USERS must be a comma-separated list of platform:userId/);
    expect(() => parseEnv({ ALLOWED_CHANNELS: 'irc:#x' })).toThrow(/ALLOWED_CHANNELS/);
    expect(() => parseEnv({ USER_DAILY_TOKENS: '0' })).toThrow(/USER_DAILY_TOKENS/);
  });
});

describe('pairing codes', () => {
  it('8 characters without look-alikes', () => {
    expect(CODE_ALPHABET).not.toMatch(/[01OIL]/);
    for (let i = 0; i < 200; i++) expect(newPairingCode()).toMatch(/^[A-HJKMNP-Z2-9]{8}$/);
  });

  it('an operator may type a code in any case, with spaces or dashes; anything else is no code', () => {
    expect(normaliseCode('abcd-2345')).toBe('ABCD2345');
    expect(normaliseCode(' AB CD 23 45 ')).toBe('ABCD2345');
    expect(normaliseCode('ABCD234')).toBeUndefined();
    expect(normaliseCode('ABCD2340')).toBeUndefined();
    expect(normaliseCode('../../x')).toBeUndefined();
  });
});
