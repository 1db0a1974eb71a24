import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers/processes.js';

const SRC = join(REPO, 'src');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

/** Module specifiers of a source file: import … from, export … from, side-effect imports, import(). */
export function specifiers(source: string): string[] {
  // Comments could mention `from '…'`; drop them first (naively, but no string in src holds "//" before an import).
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  const patterns = [/^\s*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/gm, /^\s*import\s*['"]([^'"]+)['"]/gm, /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const re of patterns) for (const m of code.matchAll(re)) found.push(m[1]!);
  return found;
}

/** The src file a relative specifier names ('./x.js' → x.ts, './dir' → dir/index.ts), or undefined for packages. */
function resolveRelative(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(dirname(from), spec);
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  const hit = candidates.find((c) => c.endsWith('.ts') && existsSync(c) && statSync(c).isFile());
  if (!hit) throw new Error(`${relative(REPO, from)}: cannot resolve ${spec}`);
  return hit;
}

/** One cycle (as a list of nodes, first repeated at the end) per back edge found by a DFS. */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (node: string) => {
    state.set(node, 'visiting');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const s = state.get(next);
      if (s === 'visiting') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (s === undefined) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

const FILES = tsFiles(SRC);
const rel = (path: string) => relative(SRC, path).split(sep).join('/');
const IMPORTS = new Map(FILES.map((f) => [f, specifiers(readFileSync(f, 'utf8'))]));

const FS_MODULES = new Set(['fs', 'node:fs', 'fs/promises', 'node:fs/promises']);
/** fs functions that change the file system (their Sync variants too); `open` counts unless every call opens read-only ('r'). */
const FS_WRITES = new Set([
  'writeFile',
  'appendFile',
  'mkdir',
  'mkdtemp',
  'rename',
  'link',
  'symlink',
  'unlink',
  'rm',
  'rmdir',
  'copyFile',
  'cp',
  'truncate',
  'chmod',
  'lchmod',
  'chown',
  'lchown',
  'utimes',
  'lutimes',
  'createWriteStream',
  'write',
  'writev',
  'open',
]);

/** The write-capable fs functions a source file uses, by named import, namespace import or require. */
export function fsWrites(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const used = new Set<string>();
  const note = (name: string) => {
    const base = name.replace(/Sync$/, '');
    if (!FS_WRITES.has(base)) return;
    if (base === 'open' && onlyReadOnlyOpens(code)) return;
    used.add(base);
  };
  for (const m of code.matchAll(/^\s*import\s+(?!type\b)([^;]*?)\s+from\s*['"]([^'"]+)['"]/gm)) {
    if (!FS_MODULES.has(m[2]!)) continue;
    const clause = m[1]!;
    const named = /\{([^}]*)\}/.exec(clause)?.[1] ?? '';
    for (const part of named.split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)[0]!;
      if (name && !part.trim().startsWith('type ')) note(name);
    }
    const namespace = /(?:\*\s*as\s+(\w+))|^(\w+)/.exec(clause.replace(/\{[^}]*\}/, '').trim());
    const ns = namespace?.[1] ?? namespace?.[2];
    if (ns) for (const use of code.matchAll(new RegExp(`\\b${ns}\\.(?:promises\\.)?(\\w+)`, 'g'))) note(use[1]!);
  }
  for (const m of code.matchAll(/\b(?:const|let|var)\s+(\w+|\{[^}]*\})\s*=\s*(?:await\s+import|require)\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    if (!FS_MODULES.has(m[2]!)) continue;
    if (m[1]!.startsWith('{')) for (const part of m[1]!.slice(1, -1).split(',')) note(part.trim().split(/\s*:\s*/)[0]!);
    else for (const use of code.matchAll(new RegExp(`\\b${m[1]}\\.(?:promises\\.)?(\\w+)`, 'g'))) note(use[1]!);
  }
  return [...used].sort();
}

function onlyReadOnlyOpens(code: string): boolean {
  const all = [...code.matchAll(/\bopen(?:Sync)?\(/g)].length;
  const readOnly = [...code.matchAll(/\bopen(?:Sync)?\([^,()]+,\s*'r'\s*\)/g)].length;
  return all === readOnly;
}

/**
 * Who may change the file system, and why. Every byte under WORKSPACE_ROOT goes through the
 * workspace write API (tools/workspace-files.ts), which follows no link; nothing else writes.
 */
const FS_WRITERS: Record<string, { may: readonly string[]; why: string }> = {
  'tools/workspace-files.ts': { may: [...FS_WRITES], why: 'the workspace write API itself' },
  'tools/exec.ts': { may: ['mkdtemp', 'rm'], why: "the sandbox check's scratch folder in the OS temp dir, never under WORKSPACE_ROOT" },
};

/**
 * Redis key strings built outside the key module: a template literal that puts `:` after an
 * interpolated prefix (`${prefix}:…`, `${this.keys.prefix}:…`), or after any interpolation a
 * key family of ours (`${p}:s:…`, `${x}:pairing:…`); a prefix concatenated with ':…'; a literal
 * hash-tagged key ('{switchboard}:…'). Ids joined with ':' (`${platform}:${id}`) are not keys.
 */
const KEY_FAMILIES = [
  's',
  'seen',
  'answered',
  'pending',
  'unreadable',
  'cancel',
  'approval',
  'run',
  'workers',
  'mcp',
  'pairing',
  'tokens',
  'rate',
  'rated',
  'access',
  'schedule',
  'schedules',
  'term',
  'slack',
  'discord',
  'telegram',
  'de',
  'lock',
];
export function redisKeyStrings(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const patterns = [
    /`[^`]*\$\{[^}]*prefix\}:[^`]*`/gi,
    new RegExp(`\`[^\`]*\\$\\{[^}]+\\}:(?:${KEY_FAMILIES.join('|')})(?=[:\`])[^\`]*\``, 'g'),
    /prefix\s*\+\s*['"`]:[^'"`]*['"`]/gi,
    /['"`]\{[\w-]+\}:[^'"`]*['"`]/g,
  ];
  const found = new Set<string>();
  for (const re of patterns) for (const m of code.matchAll(re)) found.add(m[0]);
  return [...found];
}

/** Ways to run Lua other than the script registry: ioredis' defineCommand, EVAL/EVALSHA/FCALL, and Lua (redis.call) in a file that declares no script. */
export function scriptBypasses(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = [...code.matchAll(/\.(defineCommand|eval|evalsha|evalRo|evalshaRo|fcall|fcallRo)\s*\(/g)].map((m) => m[1]!);
  if (/\bredis\.p?call\(/.test(code) && !/\bdefineScript\(/.test(code)) found.push('Lua outside defineScript');
  return found;
}

/** The Redis choke points (DESIGN.md): every key is built in the key module, every script runs through the registry. */
const KEY_MODULE = 'queue/keys.ts';
const SCRIPT_REGISTRY = 'queue/redis-scripts.ts';

/**
 * The folder order of src/, lowest first: a file may import from its own folder and from folders
 * before it, never from one after it. Each folder's README.md says its job and what it may import.
 */
export const FOLDER_ORDER: readonly (readonly [string, string])[] = [
  ['lib', 'small helpers that know nothing of the product (text, time, sleep, the config error)'],
  ['log', 'src/log.ts: the structured logger'],
  ['tools', 'the workspace, its write API, the sandbox, tool policy, MCP'],
  ['agent', 'the bounded agent loop and its model port'],
  ['config', 'the environment contract, parsed once'],
  ['channels', 'the adapter contract (types, session keys, commands) and the kit adapters share (channels/kit)'],
  ['profiles', 'agent profiles, bindings and skills (AGENTS_CONFIG)'],
  ['metrics', 'Prometheus counters and histograms'],
  ['queue', 'BullMQ plumbing, Redis keys and scripts, the producer, the reconciler, the heartbeat'],
  ['access', 'who may talk: policy, gate, pairing, rate limits, token budgets'],
  ['schedules', 'schedules: when they fire, their store, their tools'],
  ['memory', "a person's memory: the store, identities, ranking, the memory tools and prompt block"],
  ['approvals', 'the approval desk and its gated port'],
  ['session', "a session's fenced state: store, scripts, journal, control, the fold policy"],
  ['run', 'one run of a turn: the worker, the processor in phases, turn input, delivery'],
  ['intake', 'what the gateway does with a normalised message, and with a schedule firing'],
  ['adapters', 'channels/<platform>/ and channels/registry.ts: Slack, Telegram, Discord, the terminal'],
  ['http', 'the dashboard, the admin API, health'],
  ['doctor', 'npm run doctor'],
  ['roles', 'a gateway or a worker process, wired'],
  ['cli', 'the commands people run'],
];

/** Imports against the folder order, each with its reason (at most four may ever be here). */
const ORDER_EXCEPTIONS: Record<string, string> = {};

const ADAPTER_FOLDERS = ['slack', 'telegram', 'discord', 'terminal'];
/** The folder-order node of a src file. */
export function orderNode(path: string): string {
  const parts = path.split('/');
  if (parts.length === 1) return 'log';
  if (parts[0] === 'channels' && (ADAPTER_FOLDERS.includes(parts[1]!) || path === 'channels/registry.ts')) return 'adapters';
  return parts[0]!;
}

/** Imports that run against FOLDER_ORDER, as "from → to"; a file in a folder the order does not name is one too. */
export function orderViolations(imports: ReadonlyMap<string, readonly string[]>): string[] {
  const rank = new Map(FOLDER_ORDER.map(([name], i) => [name, i]));
  const found: string[] = [];
  for (const [from, targets] of imports) {
    const a = rank.get(orderNode(from));
    if (a === undefined) {
      found.push(`${from} is in no folder of FOLDER_ORDER`);
      continue;
    }
    for (const to of targets) {
      const b = rank.get(orderNode(to));
      if (b !== undefined && b > a) found.push(`${from} → ${to}`);
    }
  }
  return found;
}

const IMPORT_GRAPH = new Map(
  [...IMPORTS].map(
    ([file, specs]) =>
      [
        rel(file),
        specs
          .map((s) => resolveRelative(file, s))
          .filter((t): t is string => t !== undefined)
          .map(rel),
      ] as const,
  ),
);

const LOWER_LAYERS = ['agent', 'tools'];
const FORBIDDEN_PACKAGES = ['grammy', '@slack/bolt', '@slack/web-api', 'discord.js', 'bullmq', 'ioredis'];

describe('the import parser and the cycle finder themselves', () => {
  it('finds every kind of import', () => {
    const sample = [
      "import { a } from './a.js';",
      "import type { B } from '../b/b.js';",
      'import {',
      '  c,',
      '  d,',
      "} from 'bullmq';",
      'import * as e from "node:fs";',
      "import './side-effect.js';",
      "export { f } from './f.js';",
      "export * from '@slack/bolt';",
      "export type { G } from 'discord.js/typings';",
      "const h = await import('grammy');",
      "// import { x } from 'commented-out';",
      "/* import { y } from 'block-comment'; */",
      'const s = \'not an import from "somewhere"\';',
    ].join('\n');
    expect(specifiers(sample).sort()).toEqual(
      ['../b/b.js', './a.js', './f.js', './side-effect.js', '@slack/bolt', 'bullmq', 'discord.js/typings', 'grammy', 'node:fs'].sort(),
    );
  });

  it('finds every way a file can write with fs', () => {
    const cases: [string, string[]][] = [
      ["import { writeFile, readFile } from 'node:fs/promises';", ['writeFile']],
      ["import { mkdirSync as m } from 'fs';", ['mkdir']],
      ["import * as fs from 'node:fs';\nfs.writeFileSync(p, x); fs.readFileSync(p);", ['writeFile']],
      ["import fs from 'fs';\nawait fs.promises.rename(a, b);", ['rename']],
      ["const fs = require('node:fs');\nfs.symlinkSync(a, b);", ['symlink']],
      ["const { link } = await import('node:fs/promises');", ['link']],
      ["import { open } from 'node:fs/promises';\nconst h = await open(p, 'r');", []],
      ["import { open } from 'node:fs/promises';\nconst h = await open(p, 'wx');", ['open']],
      ["import type { Stats } from 'node:fs';\nimport { stat } from 'node:fs';", []],
      ["import { writeFile } from './not-fs.js';", []],
    ];
    for (const [source, expected] of cases) expect([source, fsWrites(source)]).toEqual([source, expected]);
  });

  it('places files in the folder order and finds imports that run up it', () => {
    expect(orderNode('log.ts')).toBe('log');
    expect(orderNode('channels/types.ts')).toBe('channels');
    expect(orderNode('channels/kit/chunk.ts')).toBe('channels');
    expect(orderNode('channels/slack/gateway.ts')).toBe('adapters');
    expect(orderNode('channels/registry.ts')).toBe('adapters');
    expect(orderNode('run/input/images.ts')).toBe('run');
    const graph = new Map([
      ['run/processor.ts', ['session/store.ts', 'agent/loop.ts']],
      ['session/store.ts', ['run/processor.ts']],
      ['channels/types.ts', ['channels/slack/gateway.ts']],
      ['newfolder/x.ts', []],
    ]);
    expect(orderViolations(graph)).toEqual([
      'session/store.ts → run/processor.ts',
      'channels/types.ts → channels/slack/gateway.ts',
      'newfolder/x.ts is in no folder of FOLDER_ORDER',
    ]);
  });

  it('finds a cycle and only real cycles', () => {
    expect(
      findCycles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', []],
        ]),
      ),
    ).toEqual([]);
    expect(
      findCycles(
        new Map([
          ['a', ['b', 'c']],
          ['b', ['c']],
          ['c', []],
        ]),
      ),
    ).toEqual([]);
    expect(
      findCycles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c', 'a']]);
    expect(findCycles(new Map([['a', ['a']]]))).toEqual([['a', 'a']]);
  });

  it('finds Redis key strings and only those', () => {
    const keys = [
      'return `${this.prefix}:schedule:${id}`;',
      'const key = `${answered.prefix}:answered:${message.platform}:${message.eventId}`;',
      'const key = (prefix: string) => `${prefix}:workers`;',
      'new RateLimiterRedis({ storeClient: redis, keyPrefix: `${prefix}:rate`, points });',
      'await redis.get(`${keys.prefix}:${keys.queueName}:de:${session}`);',
      'lease: new PollingLease(redis, `${this.deps.prefix}:telegram:poller:${botId}`, holder, ttl),',
      'const k = `${p}:s:${session}:inbox`;',
      "const k = queuePrefix + ':pairing:' + platform;",
      "const k = '{switchboard}:pending';",
    ];
    for (const source of keys) expect([source, redisKeyStrings(source).length]).toEqual([source, 1]);
    const notKeys = [
      'const base = `${enc(parts.platform)}:${enc(parts.conversation)}`;',
      'if (allowedUsers.includes(`${platform}:${sender.id}`)) return true;',
      'return `${chatId}:${messageId}`;',
      'if (prefix) pieces[0] = `${prefix}${pieces[0]}`;',
      "return `sb:approval:${id}:${decision === 'approved' ? 'approve' : 'deny'}`;",
      'throw new Error(`${route}: no response (${cause})`);',
      'return `${s.id} ran: ${outcome}`;',
      'return { prefix: config.queue.prefix, name: config.queue.name };',
      "QUEUE_PREFIX: text('a key prefix in a Redis hash tag such as {switchboard}'),",
      '/**\n * The schedules: `{prefix}:schedule:<id>` (a hash), indexed by `{prefix}:schedules`.\n */',
      '// const key = `${this.prefix}:rate`;',
      '/* `${prefix}:s:${session}:inbox` */',
    ];
    for (const source of notKeys) expect([source, redisKeyStrings(source)]).toEqual([source, []]);
  });

  it('finds every way around the script registry', () => {
    const cases: [string, string[]][] = [
      ["redis.defineCommand('sbX', { numberOfKeys: 1, lua: X });", ['defineCommand']],
      ['await this.redis.eval(ACQUIRE, 1, this.key, this.holder);', ['eval']],
      ['await redis.evalsha(sha, 0);', ['evalsha']],
      ['await redis.fcall("f", 0);', ['fcall']],
      ["const X = `if redis.call('GET', KEYS[1]) then return 1 end`;", ['Lua outside defineScript']],
      ["const X = defineScript({ name: 'sbX', keys: ['k'], args: [], lua: `return redis.call('GET', KEYS[1])`, decode: byCode({ 1: 'ok' }) });", []],
      ['await runScript(this.redis, DECIDE, { keys: { approval: key }, args: { status, by, at } });', []],
      ["// redis.defineCommand('sbOld', …) was here", []],
      ['const evaluated = evaluate(x); retrieval(y);', []],
    ];
    for (const [source, expected] of cases) expect([source, scriptBypasses(source)]).toEqual([source, expected]);
  });
});

describe('architecture', () => {
  it('sees the source tree', () => {
    expect(FILES.length).toBeGreaterThan(30);
    expect(FILES.some((f) => rel(f) === 'agent/loop.ts')).toBe(true);
    expect(FILES.some((f) => rel(f) === 'tools/workspace.ts')).toBe(true);
    // The lower layers do import things (the parser is not silently finding nothing).
    expect(IMPORTS.get(join(SRC, 'agent/loop.ts'))!.length).toBeGreaterThan(0);
  });

  it('src/agent and src/tools import none of the platform and queue packages', () => {
    const violations: string[] = [];
    for (const [file, specs] of IMPORTS) {
      if (!LOWER_LAYERS.includes(rel(file).split('/')[0]!)) continue;
      for (const spec of specs) if (FORBIDDEN_PACKAGES.some((p) => spec === p || spec.startsWith(`${p}/`))) violations.push(`${rel(file)} imports ${spec}`);
    }
    expect(violations).toEqual([]);
  });

  it('every import follows the folder order, but for the exceptions named with their reason', () => {
    const found = orderViolations(IMPORT_GRAPH);
    expect(found.filter((v) => !(v in ORDER_EXCEPTIONS))).toEqual([]);
    // An exception that no longer happens is removed, so the list says what is true.
    expect(Object.keys(ORDER_EXCEPTIONS).filter((e) => !found.includes(e))).toEqual([]);
    expect(Object.keys(ORDER_EXCEPTIONS).length).toBeLessThanOrEqual(4);
  });

  it('each folder says its job and what it may import, and the tree stays small', () => {
    const folders = [
      ...new Set(
        FILES.map(rel)
          .filter((f) => f.includes('/'))
          .map((f) => f.split('/')[0]!),
      ),
    ];
    expect(folders.filter((f) => !existsSync(join(SRC, f, 'README.md')))).toEqual([]);
    expect(folders.filter((f) => !FOLDER_ORDER.some(([name]) => name === f))).toEqual([]);
    expect(readdirSync(join(SRC, 'queue')).filter((f) => f.endsWith('.ts')).length).toBeLessThanOrEqual(12);
    // A file past 400 lines holds more than one job: split it where the jobs part.
    expect(FILES.filter((f) => readFileSync(f, 'utf8').split('\n').length > 400).map(rel)).toEqual([]);
    // Each platform's adapter has the same parts, and its outbound half stays a table of contents.
    for (const platform of ['slack', 'telegram', 'discord']) {
      const parts = ['gateway', 'inbound', 'outbound', 'stream', 'upload', 'approval-card', 'errors'];
      expect(
        parts.filter((p) => !existsSync(join(SRC, 'channels', platform, `${p}.ts`))),
        platform,
      ).toEqual([]);
      expect(readFileSync(join(SRC, 'channels', platform, 'outbound.ts'), 'utf8').split('\n').length, platform).toBeLessThanOrEqual(250);
    }
  });

  it('no signal is made with AbortSignal.any (on Node 20 it is never collected once listened to): lib/abort.ts anySignal instead', () => {
    const users = FILES.filter((f) => /AbortSignal\.any\s*\(/.test(readFileSync(f, 'utf8').replace(/^\s*(\*|\/\/).*$/gm, ''))).map(rel);
    expect(users).toEqual([]);
    // The rule sees the helper's callers (it is not silently finding nothing).
    expect(FILES.filter((f) => readFileSync(f, 'utf8').includes('anySignal(')).length).toBeGreaterThanOrEqual(5);
  });

  it("a run's job log, data and progress go through its trace (one write behind the run): only run/job-trace.ts writes them", () => {
    // ctx.job.log(, job.updateData(, this.job.updateProgress( … (the trace itself is the one writer the rule sees).
    const users = FILES.filter((f) => /\bjob\.(log|updateProgress|updateData)\s*\(/.test(readFileSync(f, 'utf8'))).map(rel);
    expect(users).toEqual(['run/job-trace.ts']);
  });

  it("every Discord message write waits for its channel's turn: only the writer calls the REST client", () => {
    // rest.ts is the client; slash.ts registers the commands at start (no message, no channel).
    const allowed = new Set(['channels/discord/writer.ts', 'channels/discord/rest.ts', 'channels/discord/slash.ts']);
    const callers = FILES.filter((f) => rel(f).startsWith('channels/discord/') && /\.request\s*(<[^>]*>)?\s*\(/.test(readFileSync(f, 'utf8'))).map(rel);
    expect(callers.filter((f) => !allowed.has(f))).toEqual([]);
    // The rule sees the writer it allows.
    expect(callers).toContain('channels/discord/writer.ts');
  });

  it('only the workspace write API changes the file system (every write under WORKSPACE_ROOT follows no link)', () => {
    const violations: string[] = [];
    for (const file of FILES) {
      const allowed = FS_WRITERS[rel(file)]?.may ?? [];
      for (const name of fsWrites(readFileSync(file, 'utf8'))) {
        if (!allowed.includes(name)) violations.push(`${rel(file)} uses fs ${name}: write through Workspace.writeFile / makeFolder / removeFile`);
      }
    }
    expect(violations).toEqual([]);
    // The rule sees the writer it allows (it is not silently finding nothing).
    expect(fsWrites(readFileSync(join(SRC, 'tools/workspace-files.ts'), 'utf8'))).toEqual(
      expect.arrayContaining(['link', 'mkdir', 'open', 'rename', 'unlink']),
    );
  });

  it('access has one gate: only access/gate.ts reads the policy, and channel adapters reach the intake and the approval desk through their ports only', () => {
    const violations: string[] = [];
    for (const [file, specs] of IMPORTS) {
      const source = readFileSync(file, 'utf8');
      for (const spec of specs) {
        const target = resolveRelative(file, spec);
        if (target === undefined) continue;
        const to = rel(target);
        if (to === 'access/policy.ts' && rel(file) !== 'access/gate.ts') violations.push(`${rel(file)} imports the access policy: decide through AccessGate`);
        // An adapter (src/channels/<platform>/) may use queue, access, approvals, session and intake types, never their values: it gets ChannelIntake and ChannelApprovals.
        const adapter = /^channels\/[^/]+\//.test(rel(file));
        const typeOnly = new RegExp(`import\\s+type\\s[^;]*?from\\s*['"]${spec.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}['"]`).test(source);
        // The Redis key module and the script registry are choke points every Redis user goes through, not ports: adapters use them too.
        const redisChokePoint = to === KEY_MODULE || to === SCRIPT_REGISTRY;
        if (adapter && /^(queue|access|approvals|session|intake)\//.test(to) && !typeOnly && !redisChokePoint)
          violations.push(`${rel(file)} imports ${spec}: adapters see the intake and approvals only through their ports`);
      }
      if (/\bnew ApprovalDesk\(/.test(source) && !['roles/gateway.ts', 'roles/worker.ts', 'cli/chat.ts'].includes(rel(file)))
        violations.push(`${rel(file)} makes its own ApprovalDesk`);
    }
    expect(violations).toEqual([]);
    // The gateway hands its channels the gated port, never the desk itself.
    expect(readFileSync(join(SRC, 'roles/gateway.ts'), 'utf8')).toMatch(/approvals: gatedApprovals\(gate, approvals\)/);
  });

  it('Redis has one key module and one script registry: no other file builds a key string, defines a command or runs EVAL', () => {
    const violations: string[] = [];
    for (const file of FILES) {
      const source = readFileSync(file, 'utf8');
      if (rel(file) !== KEY_MODULE)
        for (const key of redisKeyStrings(source)) violations.push(`${rel(file)} builds a Redis key (${key}): add it to ${KEY_MODULE}`);
      if (rel(file) !== SCRIPT_REGISTRY)
        for (const way of scriptBypasses(source)) violations.push(`${rel(file)} uses ${way}: declare the script with defineScript and run it with runScript`);
    }
    expect(violations).toEqual([]);
    // The rules see what they allow (they are not silently finding nothing).
    const keyModule = readFileSync(join(SRC, KEY_MODULE), 'utf8');
    expect(redisKeyStrings(keyModule).length).toBeGreaterThan(20);
    expect(scriptBypasses(readFileSync(join(SRC, SCRIPT_REGISTRY), 'utf8'))).toContain('defineCommand');
    const declaring = FILES.filter((f) => /\bdefineScript\(\{/.test(readFileSync(f, 'utf8')))
      .map(rel)
      .sort();
    expect(declaring).toEqual([
      'access/pairing-store.ts',
      'access/token-budget.ts',
      'approvals/desk.ts',
      'channels/telegram/lease.ts',
      'memory/store.ts',
      'queue/producer.ts',
      'run/job-trace.ts',
      'schedules/schedule-store.ts',
      'session/scripts.ts',
    ]);
  });

  it('has no circular imports in src', () => {
    expect(findCycles(new Map([...IMPORT_GRAPH].map(([f, t]) => [f, [...t]])))).toEqual([]);
  });
});
