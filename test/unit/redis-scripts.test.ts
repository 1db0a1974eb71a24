import { afterAll, describe, expect, it, vi } from 'vitest';
import { byCode, defineScript, runScript, ScriptReplyError } from '../../src/queue/redis-scripts.js';
import { SessionKeys } from '../../src/queue/keys.js';
import { ENQUEUE } from '../../src/queue/producer.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';

const redis = testRedis();
const prefix = uniquePrefix('scripts');
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
});

// Echoes KEYS and ARGV in order, so a test can see where each named value went.
const ECHO = defineScript({
  name: 'sbTestEcho',
  keys: ['first', 'second'],
  args: ['x', 'y'],
  lists: ['rest', 'more'],
  lua: `
local out = {}
for _, k in ipairs(KEYS) do out[#out + 1] = k end
for _, a in ipairs(ARGV) do out[#out + 1] = a end
return out
`,
  decode: (reply, unexpected) => (Array.isArray(reply) ? reply.map(String) : unexpected()),
});

const CODE = defineScript({ name: 'sbTestCode', keys: ['k'], args: ['code'], lua: 'return tonumber(ARGV[1])', decode: byCode({ 1: 'one', 0: 'zero' }) });

describe('the script registry', () => {
  it('sends keys, arguments and lists by name in the declared order, whatever order the call gives them in', async () => {
    const reply = await runScript(redis, ECHO, {
      keys: { second: `${prefix}:b`, first: `${prefix}:a` },
      args: { more: ['m'], y: 2, rest: ['r1', 'r2'], x: 'one' },
    });
    expect(reply).toEqual([`${prefix}:a`, `${prefix}:b`, 'one', '2', 'r1', 'r2', 'm']);
  });

  it('defines a script once per connection', async () => {
    const other = testRedis();
    try {
      const define = vi.spyOn(other, 'defineCommand');
      for (let i = 0; i < 3; i++) await runScript(other, CODE, { keys: { k: `${prefix}:k` }, args: { code: 1 } });
      expect(define).toHaveBeenCalledTimes(1);
    } finally {
      other.disconnect();
    }
  });

  it('decodes result codes by name, and a reply the declaration does not know is an error naming the script', async () => {
    expect(await runScript(redis, CODE, { keys: { k: `${prefix}:k` }, args: { code: 0 } })).toBe('zero');
    const unknown = runScript(redis, CODE, { keys: { k: `${prefix}:k` }, args: { code: 7 } });
    await expect(unknown).rejects.toBeInstanceOf(ScriptReplyError);
    await expect(unknown).rejects.toThrow('sbTestCode gave an unexpected reply: 7');
  });

  it('refuses a second script of the same name', () => {
    expect(() => defineScript({ name: 'sbTestCode', keys: [], args: [], lua: 'return 1', decode: byCode({ 1: 'one' }) })).toThrow('declared twice');
  });
});

describe('ENQUEUE: SESSION_QUEUE_MAX counts the messages waiting behind the running turn', () => {
  const keys = new SessionKeys(prefix, 'runs');
  const session = 'terminal:fold';
  const enqueue = (n: number, max: number) =>
    runScript(redis, ENQUEUE, {
      keys: {
        seen: keys.seen('terminal', `e${n}`),
        inbox: keys.inbox(session),
        pending: keys.pending,
        taken: keys.taken(session),
        agent: keys.agentOf(session),
      },
      args: { message: JSON.stringify({ id: `m${n}` }), seenTtl: 60, session, max, agent: 'default' },
    });

  it('a turn that folded two messages leaves room for two more behind it', async () => {
    for (const n of [1, 2]) expect(await enqueue(n, 2)).toEqual({ kind: 'queued', length: n });
    expect(await enqueue(3, 2)).toEqual({ kind: 'full' });
    // The running turn took both (what the processor records after the fold policy chose).
    await redis.set(keys.taken(session), '2');
    expect(await enqueue(3, 2)).toEqual({ kind: 'queued', length: 3 });
    expect(await enqueue(4, 2)).toEqual({ kind: 'queued', length: 4 });
    expect(await enqueue(5, 2)).toEqual({ kind: 'full' });
    expect(await enqueue(4, 2)).toEqual({ kind: 'duplicate' });
    expect(await enqueue(5, 0)).toEqual({ kind: 'queued', length: 5 });
  });
});
