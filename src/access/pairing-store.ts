import type { Redis } from 'ioredis';
import type { InboundMessage } from '../channels/types.js';
import { RedisKeys } from '../queue/keys.js';
import { defineScript, runScript } from '../queue/redis-scripts.js';
import { newPairingCode, normaliseCode } from './pairing-code.js';

/** How long a code stays valid, and how many may wait per platform (the rest are told to try later). */
export const PAIRING_TTL_MS = 3_600_000;
export const MAX_PENDING_PER_PLATFORM = 3;
/**
 * A person whose code expired unused, or was denied, gets no new code for this long (counted from
 * the expiry or the denial): otherwise three accounts asking again every hour hold every slot.
 */
export const PAIRING_COOLDOWN_MS = 24 * 3_600_000;

/** Where to tell the person once decided: the DM they wrote from, without the message or any token. */
export type ReplyTarget = Pick<InboundMessage, 'v' | 'id' | 'platform' | 'conversation' | 'thread' | 'sender' | 'where'> & {
  text: '';
  attachments: [];
  eventId: string;
  receivedAt: number;
};

export interface PairingRequest {
  code: string;
  platform: string;
  userId: string;
  name?: string;
  createdAt: number;
  expiresAt: number;
  to: ReplyTarget;
}

export interface ApprovedUser {
  platform: string;
  userId: string;
  name?: string;
  approvedAt: number;
  /** Who approved: `cli` or `api`. */
  by: string;
}

/** `cooldown`: this person's last code expired unused or was denied; `retryAt` is when they may ask again. */
export type RequestResult =
  | { kind: 'issued' | 'pending'; request: PairingRequest }
  | { kind: 'approved' }
  | { kind: 'full' }
  | { kind: 'cooldown'; retryAt: number };

// `codes`: code → request JSON; `approved`: userId → JSON; `cooldown`: userId → ms since when (the
// expiry of their unused code, or their denial). `collision`: the new code is taken (pick another).
// Expired codes and cooldowns are pruned here (Redis 7.0 has no per-field expiry); an expired code's
// person is recorded in the cooldown hash. The codes hash holds at most `maxPending` live codes; each code
// in it came from a request, so the cooldown hash holds about maxPending × cooldown / TTL people at most,
// plus the ones the operator denied.
const REQUEST = defineScript({
  name: 'sbPairingRequest',
  keys: ['codes', 'approved', 'cooldown'],
  args: ['now', 'userId', 'code', 'request', 'maxPending', 'cooldownMs'],
  lua: `
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return {'approved'} end
local now = tonumber(ARGV[1])
local cooldown = tonumber(ARGV[6])
local live = 0
local mine = nil
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local r = cjson.decode(all[i + 1])
  if r.expiresAt <= now then
    redis.call('HDEL', KEYS[1], all[i])
    local since = tonumber(redis.call('HGET', KEYS[3], r.userId))
    if not since or since < r.expiresAt then redis.call('HSET', KEYS[3], r.userId, r.expiresAt) end
  elseif r.userId == ARGV[2] then mine = all[i + 1]
  else live = live + 1 end
end
if mine then return {'pending', mine} end
local waiting = redis.call('HGETALL', KEYS[3])
for i = 1, #waiting, 2 do
  local retry = tonumber(waiting[i + 1]) + cooldown
  if retry <= now then redis.call('HDEL', KEYS[3], waiting[i])
  elseif waiting[i] == ARGV[2] then return {'cooldown', tostring(retry)} end
end
if live >= tonumber(ARGV[5]) then return {'full'} end
if redis.call('HSETNX', KEYS[1], ARGV[3], ARGV[4]) == 0 then return {'collision'} end
return {'issued', ARGV[4]}
`,
  decode: (reply, unexpected): RequestResult | { kind: 'collision' } => {
    if (!Array.isArray(reply)) return unexpected();
    const [kind, value] = reply;
    if (kind === 'approved' || kind === 'full' || kind === 'collision') return { kind };
    if ((kind === 'issued' || kind === 'pending') && typeof value === 'string') return { kind, request: JSON.parse(value) as PairingRequest };
    if (kind === 'cooldown') return { kind, retryAt: Number(value) };
    return unexpected();
  },
});

// `approval`: JSON {approvedAt, by}, or '' to deny. → the request JSON, or nil (no such live code).
// The approved entry takes the user from the request.
// A denied or expired code puts its person in the cooldown hash (from now, or from its expiry).
const DECIDE = defineScript({
  name: 'sbPairingDecide',
  keys: ['codes', 'approved', 'cooldown'],
  args: ['code', 'now', 'approval'],
  lua: `
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return nil end
redis.call('HDEL', KEYS[1], ARGV[1])
local r = cjson.decode(raw)
local now = tonumber(ARGV[2])
if r.expiresAt <= now then
  redis.call('HSET', KEYS[3], r.userId, r.expiresAt)
  return nil
end
if ARGV[3] ~= '' then
  local a = cjson.decode(ARGV[3])
  a.platform = r.platform
  a.userId = r.userId
  a.name = r.name
  redis.call('HSET', KEYS[2], r.userId, cjson.encode(a))
  redis.call('HDEL', KEYS[3], r.userId)
else
  redis.call('HSET', KEYS[3], r.userId, now)
end
return raw
`,
  decode: (reply, unexpected): PairingRequest | undefined =>
    reply === null ? undefined : typeof reply === 'string' ? (JSON.parse(reply) as PairingRequest) : unexpected(),
});

/**
 * Pairing codes and approved users, per platform, in Redis (they survive restarts and are shared
 * by every gateway). A request is one script: the per-platform cap and the one-code-per-person
 * rule hold under concurrent messages.
 */
export class PairingStore {
  private readonly keys: RedisKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = new RedisKeys(prefix);
  }

  private platformKeys(platform: string) {
    return { codes: this.keys.pairingCodes(platform), approved: this.keys.pairingApproved(platform), cooldown: this.keys.pairingCooldown(platform) };
  }

  async isApproved(platform: string, userId: string): Promise<boolean> {
    return (await this.redis.hexists(this.keys.pairingApproved(platform), userId)) === 1;
  }

  /** The person's live code (a new one, or the one they already have, with its first expiry), or why there is none. */
  async request(message: InboundMessage, now = Date.now()): Promise<RequestResult> {
    const { platform } = message;
    for (;;) {
      const code = newPairingCode();
      const request: PairingRequest = {
        code,
        platform,
        userId: message.sender.id,
        ...(message.sender.name !== undefined && { name: message.sender.name }),
        createdAt: now,
        expiresAt: now + PAIRING_TTL_MS,
        to: replyTarget(message),
      };
      const result = await runScript(this.redis, REQUEST, {
        keys: this.platformKeys(platform),
        args: { now, userId: message.sender.id, code, request: JSON.stringify(request), maxPending: MAX_PENDING_PER_PLATFORM, cooldownMs: PAIRING_COOLDOWN_MS },
      });
      if (result.kind !== 'collision') return result;
    }
  }

  /** Approves a live code: its user is let in from now on. Undefined when the code is unknown or expired. */
  async approve(platform: string, typedCode: string, by: string, now = Date.now()): Promise<PairingRequest | undefined> {
    return this.decide(platform, typedCode, now, JSON.stringify({ approvedAt: now, by }));
  }

  async deny(platform: string, typedCode: string, now = Date.now()): Promise<PairingRequest | undefined> {
    return this.decide(platform, typedCode, now, '');
  }

  private async decide(platform: string, typedCode: string, now: number, approval: string): Promise<PairingRequest | undefined> {
    const code = normaliseCode(typedCode);
    if (code === undefined) return undefined;
    return runScript(this.redis, DECIDE, { keys: this.platformKeys(platform), args: { code, now, approval } });
  }

  /** Takes an approved user's access away; true when they had it. */
  async revoke(platform: string, userId: string): Promise<boolean> {
    return (await this.redis.hdel(this.keys.pairingApproved(platform), userId)) === 1;
  }

  async pending(platform: string, now = Date.now()): Promise<PairingRequest[]> {
    const all = Object.values(await this.redis.hgetall(this.keys.pairingCodes(platform))).map((raw) => JSON.parse(raw) as PairingRequest);
    return all.filter((r) => r.expiresAt > now).sort((a, b) => a.createdAt - b.createdAt);
  }

  async approved(platform: string): Promise<ApprovedUser[]> {
    return Object.values(await this.redis.hgetall(this.keys.pairingApproved(platform))).map((raw) => JSON.parse(raw) as ApprovedUser);
  }
}

function replyTarget(m: InboundMessage): ReplyTarget {
  return {
    v: 1,
    id: `pairing-${m.id}`,
    platform: m.platform,
    conversation: m.conversation,
    ...(m.thread !== undefined && { thread: m.thread }),
    sender: m.sender,
    ...(m.where !== undefined && { where: m.where }),
    text: '',
    attachments: [],
    eventId: `pairing-${m.eventId}`,
    receivedAt: m.receivedAt,
  };
}
