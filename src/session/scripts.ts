import type { InboundMessage } from '../channels/types.js';
import { defineScript, type Reply } from '../queue/redis-scripts.js';
import type { ClaimedMessage } from './turn.js';

/**
 * The session's state changes, each one Lua script so it is atomic with the checks it needs.
 * "Fenced" scripts first check that the caller still holds its BullMQ job lock (the token) and
 * owns the session: a worker that froze past its lock and woke up after its job moved elsewhere
 * cannot change anything. Each script declares its keys and arguments by name and decodes its
 * reply into a typed result here; session-store.ts is the only caller and turns a refusal into
 * a FencedError.
 */

/** Result codes of the fenced scripts (negative: refused). */
export const FENCE = { lockLost: -1, notOwner: -2, headChanged: -3 } as const;
export type FenceCode = (typeof FENCE)[keyof typeof FENCE];
/** A fenced script refused to write: the caller must stop without another side effect. */
export type Fenced = { kind: 'fenced'; code: FenceCode };

/** A fenced script's integer reply: one of `codes` is a refusal, anything else not negative is `ok`'s. */
function fenced<R>(ok: (n: number) => R, codes: readonly FenceCode[] = [FENCE.lockLost, FENCE.notOwner]) {
  return (reply: Reply, unexpected: () => never): R | Fenced => {
    if (typeof reply !== 'number') return unexpected();
    if ((codes as readonly number[]).includes(reply)) return { kind: 'fenced', code: reply as FenceCode };
    return reply >= 0 ? ok(reply) : unexpected();
  };
}

/** What the session keeps of its past, as stored: the raw turns (JSON, oldest first), how many were ever appended, and the summary. */
export interface SessionHistory {
  entries: string[];
  /** null: a history from before the count was kept (its turns are numbered from 1). */
  count: string | null;
  summary: string | null;
}

export type Claim =
  /** Another live run owns the session: this job leaves the inbox to it. */
  | { kind: 'busy'; holder: string }
  /** No waiting messages and no reply to deliver: the session was released. */
  | { kind: 'empty'; unreadable: number }
  | {
      kind: 'claimed';
      /** A reply an earlier run committed and did not confirm delivered (JSON, as committed). */
      pendingReply?: string;
      /** The session's journal: the unfinished turn's steps, or the pending reply's delivery. */
      journal: string[];
      /** The inbox head (up to foldMax), each with its crash count. */
      messages: ClaimedMessage[];
      /** The session's history as it is now: the turn's prompt carries it. */
      history: SessionHistory;
      /** The agent recorded with the session (absent: none yet, e.g. after /reset). */
      agent?: string;
      /** Entries at the head no script could read, moved to the unreadable list by this claim. */
      unreadable: number;
    };

// → {1, outbox, moved aside, history count or '', summary or '', #journal, #history, agent or '', journal
//   entries..., history entries..., (count, message)...} claimed · {0, moved aside}
//   nothing to do (released) · {-1} lock lost · {-2, holder} another live run owns the session.
// An inbox entry this script cannot decode (e.g. JSON with a lone UTF-16 surrogate) would fail
// every claim of its session forever: at the head it is moved to the unreadable list, and a fold
// stops before it. The crash counter counts runs that started at the same point: same head
// message, same journal length. A run that made progress (journaled a step) resets it.
export const CLAIM = defineScript({
  name: 'sbClaim',
  keys: ['lock', 'owner', 'inbox', 'claims', 'outbox', 'journal', 'unreadable', 'history', 'historyCount', 'historySummary', 'agent'],
  args: ['token', 'jobId', 'jobKeyBase', 'foldMax'],
  lua: `
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
local history = redis.call('LRANGE', KEYS[8], 0, -1)
local result = {1, outbox, moved, redis.call('GET', KEYS[9]) or '', redis.call('GET', KEYS[10]) or '', #journal, #history, redis.call('GET', KEYS[11]) or ''}
for _, entry in ipairs(journal) do result[#result + 1] = entry end
for _, entry in ipairs(history) do result[#result + 1] = entry end
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
`,
  decode: (r, unexpected): Claim | Fenced => {
    if (!Array.isArray(r)) return unexpected();
    const status = r[0];
    if (status === FENCE.lockLost) return { kind: 'fenced', code: FENCE.lockLost };
    if (status === -2) return { kind: 'busy', holder: String(r[1]) };
    if (status === 0) return { kind: 'empty', unreadable: Number(r[1] ?? 0) };
    if (status !== 1) return unexpected();
    const outbox = String(r[1]);
    const unreadable = Number(r[2]);
    const count = String(r[3]);
    const summary = String(r[4]);
    const journalLength = Number(r[5]);
    const historyLength = Number(r[6]);
    const agent = String(r[7]);
    const journal = r.slice(8, 8 + journalLength).map(String);
    const history: SessionHistory = {
      entries: r.slice(8 + journalLength, 8 + journalLength + historyLength).map(String),
      count: count === '' ? null : count,
      summary: summary === '' ? null : summary,
    };
    const messages: ClaimedMessage[] = [];
    for (let i = 8 + journalLength + historyLength; i < r.length; i += 2) {
      const raw = String(r[i + 1]);
      messages.push({ claims: Number(r[i]), raw, message: JSON.parse(raw) as InboundMessage });
    }
    return { kind: 'claimed', journal, messages, history, unreadable, ...(agent && { agent }), ...(outbox && { pendingReply: outbox }) };
  },
});

// Appends the entries (after emptying the journal when `fresh` is '1'). → the journal's length.
export const JOURNAL = defineScript({
  name: 'sbJournal',
  keys: ['lock', 'owner', 'journal'],
  args: ['token', 'jobId', 'fresh'],
  lists: ['entries'],
  lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -2 end
if ARGV[3] == '1' then redis.call('DEL', KEYS[3]) end
if #ARGV < 4 then return redis.call('LLEN', KEYS[3]) end
return redis.call('RPUSH', KEYS[3], unpack(ARGV, 4))
`,
  decode: fenced((length) => ({ kind: 'written' as const, length })),
});

// `historyMode`: 'append' | 'reset' | 'keep'; `count`: how many messages the run took (`ids` and
// `raws` list them, in inbox order). Removes them (they must still be the inbox head), records
// the turn and the reply to deliver, and closes the turn's journal (delivery starts a new one),
// in one step. The session stays in the pending set until its reply is settled, so the
// reconciler also finds a committed reply whose job failed for good.
// → the messages left, or -1 / -2 (fenced), -3 the inbox head changed (someone else committed it).
export const COMMIT = defineScript({
  name: 'sbCommit',
  keys: ['lock', 'owner', 'inbox', 'history', 'last', 'outbox', 'claims', 'pending', 'journal', 'historyCount', 'historySummary', 'taken', 'agent'],
  args: ['token', 'jobId', 'historyMode', 'historyEntry', 'historyMax', 'last', 'outbox', 'session', 'count'],
  lists: ['ids', 'raws'],
  lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -2 end
local n = tonumber(ARGV[9])
local head = redis.call('LRANGE', KEYS[3], 0, n - 1)
if #head ~= n then return -3 end
for i = 1, n do
  if head[i] ~= ARGV[9 + n + i] then return -3 end
end
redis.call('LTRIM', KEYS[3], n, -1)
redis.call('DEL', KEYS[12])
for i = 1, n do redis.call('HDEL', KEYS[7], ARGV[9 + i], ARGV[9 + i] .. '@') end
-- A reset forgets the agent too: the session's next message is given one by the bindings as they are now.
if ARGV[3] == 'reset' then redis.call('DEL', KEYS[4], KEYS[10], KEYS[11], KEYS[13]) end
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
`,
  decode: fenced((left) => ({ kind: 'committed' as const, left }), [FENCE.lockLost, FENCE.notOwner, FENCE.headChanged]),
});

// `delivered`: the outbox JSON delivered ('' for none); `release`: '1' to give the session up.
// Clears the outbox entry that was delivered (only that one) with its delivery journal and, when
// asked, the ownership; a session with nothing left to do leaves the pending set. → 1, or -1 / -2 (fenced)
export const SETTLE = defineScript({
  name: 'sbSettle',
  keys: ['lock', 'owner', 'outbox', 'journal', 'inbox', 'pending'],
  args: ['token', 'jobId', 'delivered', 'release', 'session'],
  lua: `
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
`,
  decode: fenced(() => ({ kind: 'settled' as const })),
});

// A session key only the run holding the session writes (the history summary, the turn's taken count). → 1, or -1 / -2 (fenced)
export const FENCED_SET = defineScript({
  name: 'sbFencedSet',
  keys: ['lock', 'owner', 'key'],
  args: ['token', 'jobId', 'value'],
  lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -2 end
redis.call('SET', KEYS[3], ARGV[3])
return 1
`,
  decode: fenced(() => ({ kind: 'set' as const })),
});
