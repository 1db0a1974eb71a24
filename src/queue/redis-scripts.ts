import type { Redis } from 'ioredis';

/**
 * The one way Switchboard runs Lua in Redis. Each script is declared once (`defineScript`, beside
 * the store that uses it) with its name, its keys and arguments by name in KEYS/ARGV order, and
 * a decoder that turns its reply into a typed result; `runScript` takes them as objects, so no
 * call site counts positions. Scripts are defined on a connection the first time one runs there
 * (ioredis then sends EVALSHA, and EVAL once after a NOSCRIPT). An architecture test keeps
 * `defineCommand` and `eval` out of every other file.
 */

/** A script's reply as ioredis hands it over: integers as numbers, strings, tables as arrays, nil (false) as null. */
export type Reply = number | string | null | Reply[];
/** One key or argument as sent (a number goes as its decimal text). */
export type Arg = string | number;

export interface ScriptSpec<K extends string, A extends string, L extends string, R> {
  /** The command name defined on a connection (`sb…`): unique. */
  name: string;
  /** KEYS[1], KEYS[2], … by name. */
  keys: readonly K[];
  /** ARGV[1], ARGV[2], … by name. */
  args: readonly A[];
  /** Lists sent after `args`, one argument per item, in this order (a length the script needs is a named argument). */
  lists?: readonly L[];
  lua: string;
  /** The reply as a typed result; `unexpected` throws for a reply the script cannot give. */
  decode: (reply: Reply, unexpected: () => never) => R;
}

export type Script<K extends string = string, A extends string = string, L extends string = string, R = unknown> = Readonly<Required<ScriptSpec<K, A, L, R>>>;

/** What a call gives a script: every key and every argument (and list) by name. */
export interface ScriptInput<K extends string, A extends string, L extends string> {
  keys: Readonly<Record<K, string>>;
  args: Readonly<Record<A, Arg>> & Readonly<Record<L, readonly Arg[]>>;
}

/** A reply the script's decoder does not know: a bug in the script or its declaration, never a user's doing. */
export class ScriptReplyError extends Error {
  override readonly name = 'ScriptReplyError';
  constructor(script: string, reply: Reply) {
    super(`Redis script ${script} gave an unexpected reply: ${JSON.stringify(reply)}`);
  }
}

const declared = new Set<string>();

export function defineScript<const K extends string, const A extends string, R, const L extends string = never>(
  spec: ScriptSpec<K, A, L, R>,
): Script<K, A, L, R> {
  if (declared.has(spec.name)) throw new Error(`Redis script ${spec.name} is declared twice`);
  declared.add(spec.name);
  return Object.freeze({ ...spec, lists: spec.lists ?? [] });
}

export async function runScript<K extends string, A extends string, L extends string, R>(
  redis: Redis,
  script: Script<K, A, L, R>,
  input: ScriptInput<K, A, L>,
): Promise<R> {
  const command = definedOn(redis, script);
  const args = input.args as Readonly<Record<string, Arg | readonly Arg[]>>;
  const argv: Arg[] = [
    ...script.keys.map((k) => input.keys[k]),
    ...script.args.map((a) => args[a] as Arg),
    ...script.lists.flatMap((l) => args[l] as readonly Arg[]),
  ];
  const reply = await command.apply(redis, argv);
  return script.decode(reply, () => {
    throw new ScriptReplyError(script.name, reply);
  });
}

/** The script's command on this connection, defined the first time (idempotent per connection). */
function definedOn(redis: Redis, script: Script): (...argv: Arg[]) => Promise<Reply> {
  const commands = redis as unknown as Record<string, ((...argv: Arg[]) => Promise<Reply>) | undefined>;
  if (typeof commands[script.name] !== 'function') redis.defineCommand(script.name, { numberOfKeys: script.keys.length, lua: script.lua });
  return commands[script.name]!;
}

/** An integer reply decoded by a table of codes: `byCode({ 1: 'decided', 0: 'not_pending' })`. */
export function byCode<const T extends Readonly<Record<number, string>>>(table: T): (reply: Reply, unexpected: () => never) => T[keyof T] {
  return (reply, unexpected) => (typeof reply === 'number' && Object.hasOwn(table, reply) ? (table[reply] as T[keyof T]) : unexpected());
}
