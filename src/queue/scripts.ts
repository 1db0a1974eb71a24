import type { Redis } from 'ioredis';

/**
 * The session's state changes, each one Lua script so it is atomic with the checks it needs.
 * "Fenced" scripts first check that the caller still holds its BullMQ job lock (the token) and
 * owns the session: a worker that froze past its lock and woke up after its job moved elsewhere
 * cannot change anything. Each script's inputs and outputs are listed above it; session-store.ts
 * is the only caller and turns the result codes into typed results and errors.
 */

/** Result codes of the fenced scripts (negative: refused). */
export const FENCE = { lockLost: -1, notOwner: -2, headChanged: -3 } as const;
/** The claim's codes besides a lock lost and a claimed turn (1): nothing to do, another live run owns the session. */
export const CLAIMED = { empty: 0, busy: -2 } as const;

// KEYS: seen, inbox, pending   ARGV: message JSON, seen TTL seconds, session key, most waiting messages (0: no cap)
// → the inbox length, -1 (a duplicate event) or -2 (the inbox is full: not queued, not marked seen)
const ENQUEUE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
local max = tonumber(ARGV[4])
if max > 0 and redis.call('LLEN', KEYS[2]) >= max then return -2 end
redis.call('SET', KEYS[1], '1', 'EX', ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[3])
return redis.call('LLEN', KEYS[2])
`;

// KEYS: lock, owner, inbox, claims, outbox, journal, unreadable   ARGV: token, jobId, jobKeyBase, foldMax
// → {1, outbox, moved aside, #journal, journal entries..., (count, message)...} claimed · {0}
//   nothing to do (released) · {-1} lock lost · {-2, holder} another live run owns the session.
// An inbox entry this script cannot decode (e.g. JSON with a lone UTF-16 surrogate) would fail
// every claim of its session forever: at the head it is moved to the unreadable list, and a fold
// stops before it. The crash counter counts runs that started at the same point: same head
// message, same journal length. A run that made progress (journaled a step) resets it.
const CLAIM = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {-1} end
local owner = redis.call('GET', KEYS[2])
if owner and owner ~= ARGV[2] and redis.call('EXISTS', ARGV[3] .. owner .. ':lock') == 1 then
  return {-2, owner}
end
local moved = 0
while true do
  local first = redis.call('LINDEX', KEYS[3], 0)
  if not first or pcall(cjson.decode, first) then break end
  redis.call('RPUSH', KEYS[7], redis.call('LPOP', KEYS[3]))
  moved = moved + 1
end
local outbox = redis.call('GET', KEYS[5]) or ''
local msgs = redis.call('LRANGE', KEYS[3], 0, tonumber(ARGV[4]) - 1)
if #msgs == 0 and outbox == '' then
  redis.call('DEL', KEYS[2])
  return {0, moved}
end
redis.call('SET', KEYS[2], ARGV[2])
local journal = redis.call('LRANGE', KEYS[6], 0, -1)
local result = {1, outbox, moved, #journal}
for _, entry in ipairs(journal) do result[#result + 1] = entry end
for i, m in ipairs(msgs) do
  local decoded, message = pcall(cjson.decode, m)
  if not decoded then break end
  local id = message['id']
  local count
  if i == 1 then
    local at = id .. '@'
    if redis.call('HGET', KEYS[4], at) == tostring(#journal) then
      count = redis.call('HINCRBY', KEYS[4], id, 1)
    else
      redis.call('HSET', KEYS[4], id, 1, at, #journal)
      count = 1
    end
  else
    count = redis.call('HGET', KEYS[4], id) or 0
  end
  result[#result + 1] = tostring(count)
  result[#result + 1] = m
end
return result
`;

// KEYS: lock, owner, journal   ARGV: token, jobId, '1' to start it afresh, entries (JSON)...
// → the journal's length, or -1 / -2 (fenced)
const JOURNAL = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -2 end
if ARGV[3] == '1' then redis.call('DEL', KEYS[3]) end
for i = 4, #ARGV do redis.call('RPUSH', KEYS[3], ARGV[i]) end
return redis.call('LLEN', KEYS[3])
`;

// KEYS: lock, owner, inbox, history, last, outbox, claims, pending, journal, history count, history summary
// ARGV: token, jobId, historyMode ('append' | 'reset' | 'keep'), historyEntry, historyMax,
//       lastJson, outboxJson, session, n, ids (n)..., raw messages (n)...
// Removes the n messages the run took (they must still be the inbox head), records the turn and
// the reply to deliver, and closes the turn's journal (delivery starts a new one), in one step.
// The session stays in the pending set until its reply is settled, so the reconciler also finds
// a committed reply whose job failed for good.
// → the messages left, or -1 / -2 (fenced), -3 the inbox head changed (someone else committed it).
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
for i = 1, n do redis.call('HDEL', KEYS[7], ARGV[9 + i], ARGV[9 + i] .. '@') end
if ARGV[3] == 'reset' then redis.call('DEL', KEYS[4], KEYS[10], KEYS[11]) end
if ARGV[3] == 'append' then
  -- The count numbers the turns ever appended (the list keeps the last historyMax), so a summary
  -- can say which turns it covers; a history from before the count starts at its length.
  if redis.call('EXISTS', KEYS[10]) == 0 then redis.call('SET', KEYS[10], redis.call('LLEN', KEYS[4])) end
  redis.call('INCR', KEYS[10])
  redis.call('RPUSH', KEYS[4], ARGV[4])
  redis.call('LTRIM', KEYS[4], -tonumber(ARGV[5]), -1)
end
redis.call('SET', KEYS[5], ARGV[6])
redis.call('SET', KEYS[6], ARGV[7])
redis.call('DEL', KEYS[9])
local left = redis.call('LLEN', KEYS[3])
if left == 0 then redis.call('DEL', KEYS[7]) end
return left
`;

// KEYS: lock, owner, outbox, journal, inbox, pending   ARGV: token, jobId, delivered outbox JSON ('' for none), '1' to give the session up, session
// Clears the outbox entry that was delivered (only that one) with its delivery journal and, when
// asked, the ownership; a session with nothing left to do leaves the pending set. → 1, or -1 / -2 (fenced)
const SETTLE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -2 end
if ARGV[3] ~= '' and redis.call('GET', KEYS[3]) == ARGV[3] then
  redis.call('DEL', KEYS[3])
  redis.call('DEL', KEYS[4])
end
if ARGV[4] == '1' then
  redis.call('DEL', KEYS[2])
  if redis.call('LLEN', KEYS[5]) == 0 and redis.call('EXISTS', KEYS[3]) == 0 then redis.call('SREM', KEYS[6], ARGV[5]) end
end
return 1
`;

// KEYS: lock, owner, key   ARGV: token, jobId, value → 1, or -1 / -2 (fenced)
// A session key only the run holding the session writes (the history summary).
const FENCED_SET = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -2 end
redis.call('SET', KEYS[3], ARGV[3])
return 1
`;

export interface SessionScripts {
  sbEnqueue(seen: string, inbox: string, pending: string, message: string, ttl: number, session: string, max: number): Promise<number>;
  sbClaim(...args: (string | number)[]): Promise<(string | number)[]>;
  sbJournal(...args: string[]): Promise<number>;
  sbCommit(...args: (string | number)[]): Promise<number>;
  sbFencedSet(...args: string[]): Promise<number>;
  sbSettle(...args: string[]): Promise<number>;
}

export type ScriptedRedis = Redis & SessionScripts;

/** Defines the scripts on a connection (idempotent per connection). */
export function withSessionScripts(redis: Redis): ScriptedRedis {
  const r = redis as ScriptedRedis;
  if (typeof r.sbJournal === 'function') return r;
  redis.defineCommand('sbEnqueue', { numberOfKeys: 3, lua: ENQUEUE });
  redis.defineCommand('sbClaim', { numberOfKeys: 7, lua: CLAIM });
  redis.defineCommand('sbJournal', { numberOfKeys: 3, lua: JOURNAL });
  redis.defineCommand('sbCommit', { numberOfKeys: 11, lua: COMMIT });
  redis.defineCommand('sbFencedSet', { numberOfKeys: 3, lua: FENCED_SET });
  redis.defineCommand('sbSettle', { numberOfKeys: 6, lua: SETTLE });
  return r;
}
