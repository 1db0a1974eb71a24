import type { Redis } from 'ioredis';

/**
 * The session's state changes, each one Lua script so it is atomic with the checks it needs.
 * "Fenced" scripts first check that the caller still holds its BullMQ job lock (the token) and
 * owns the session: a worker that froze past its lock and woke up after its job moved elsewhere
 * cannot change anything.
 */

// KEYS: seen, inbox, pending   ARGV: message JSON, seen TTL seconds, session key
const ENQUEUE = `
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then return -1 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[3])
return redis.call('LLEN', KEYS[2])
`;

// KEYS: lock, owner, inbox, claims, outbox   ARGV: token, jobId, jobKeyBase, foldMax
// Returns {status, ownerOrOutbox, messages...}: status 1 claimed, 0 inbox empty (released),
// -1 lock lost, -2 busy (another live run owns the session).
const CLAIM = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {-1, ''} end
local owner = redis.call('GET', KEYS[2])
if owner and owner ~= ARGV[2] and redis.call('EXISTS', ARGV[3] .. owner .. ':lock') == 1 then
  return {-2, owner}
end
local outbox = redis.call('GET', KEYS[5]) or ''
local msgs = redis.call('LRANGE', KEYS[3], 0, tonumber(ARGV[4]) - 1)
if #msgs == 0 and outbox == '' then
  redis.call('DEL', KEYS[2])
  return {0, ''}
end
redis.call('SET', KEYS[2], ARGV[2])
local result = {1, outbox}
-- Only the head is certainly taken by this run, so only its start is counted.
for i, m in ipairs(msgs) do
  local id = cjson.decode(m)['id']
  local count = i == 1 and redis.call('HINCRBY', KEYS[4], id, 1) or (redis.call('HGET', KEYS[4], id) or 0)
  result[#result + 1] = tostring(count)
  result[#result + 1] = m
end
return result
`;

// KEYS: lock, owner, inbox, history, last, outbox, claims, pending
// ARGV: token, jobId, historyMode ('append' | 'reset' | 'keep'), historyEntry, historyMax,
//       lastJson, outboxJson, session, n, ids (n)..., raw messages (n)...
// Removes the n messages the run took (they must still be the inbox head), records the turn and
// the reply to deliver, in one step. Returns the messages left, or -1 lock lost, -2 not owner,
// -3 the inbox head changed (someone else committed it).
const COMMIT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -2 end
local n = tonumber(ARGV[9])
local head = redis.call('LRANGE', KEYS[3], 0, n - 1)
if #head ~= n then return -3 end
for i = 1, n do
  if head[i] ~= ARGV[9 + n + i] then return -3 end
end
redis.call('LTRIM', KEYS[3], n, -1)
for i = 1, n do redis.call('HDEL', KEYS[7], ARGV[9 + i]) end
if ARGV[3] == 'reset' then redis.call('DEL', KEYS[4]) end
if ARGV[3] == 'append' then
  redis.call('RPUSH', KEYS[4], ARGV[4])
  redis.call('LTRIM', KEYS[4], -tonumber(ARGV[5]), -1)
end
redis.call('SET', KEYS[5], ARGV[6])
redis.call('SET', KEYS[6], ARGV[7])
local left = redis.call('LLEN', KEYS[3])
if left == 0 then
  redis.call('SREM', KEYS[8], ARGV[8])
  redis.call('DEL', KEYS[7])
end
return left
`;

// KEYS: lock, owner, outbox   ARGV: token, jobId, delivered outbox JSON ('' for none), '1' to give the session up
// Clears the outbox entry that was delivered (only that one) and, when asked, the ownership.
const SETTLE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -2 end
if ARGV[3] ~= '' and redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
if ARGV[4] == '1' then redis.call('DEL', KEYS[2]) end
return 1
`;

export interface SessionScripts {
  sbEnqueue(seen: string, inbox: string, pending: string, message: string, ttl: number, session: string): Promise<number>;
  sbClaim(lock: string, owner: string, inbox: string, claims: string, outbox: string, token: string, jobId: string, jobBase: string, foldMax: number): Promise<(string | number)[]>;
  sbCommit(...args: (string | number)[]): Promise<number>;
  sbSettle(lock: string, owner: string, outbox: string, token: string, jobId: string, delivered: string, release: '0' | '1'): Promise<number>;
}

export type ScriptedRedis = Redis & SessionScripts;

/** Defines the scripts on a connection (idempotent per connection). */
export function withSessionScripts(redis: Redis): ScriptedRedis {
  const r = redis as ScriptedRedis;
  if (typeof r.sbClaim === 'function') return r;
  redis.defineCommand('sbEnqueue', { numberOfKeys: 3, lua: ENQUEUE });
  redis.defineCommand('sbClaim', { numberOfKeys: 5, lua: CLAIM });
  redis.defineCommand('sbCommit', { numberOfKeys: 8, lua: COMMIT });
  redis.defineCommand('sbSettle', { numberOfKeys: 3, lua: SETTLE });
  return r;
}
