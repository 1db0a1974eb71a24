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
  const patterns = [
    /^\s*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
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
const FS_WRITES = new Set(['writeFile', 'appendFile', 'mkdir', 'mkdtemp', 'rename', 'link', 'symlink', 'unlink', 'rm', 'rmdir', 'copyFile', 'cp', 'truncate', 'chmod', 'lchmod', 'chown', 'lchown', 'utimes', 'lutimes', 'createWriteStream', 'write', 'writev', 'open']);

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
      const name = part.trim().replace(/^type\s+/, '').split(/\s+as\s+/)[0]!;
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
const KEY_FAMILIES = ['s', 'seen', 'answered', 'pending', 'unreadable', 'cancel', 'approval', 'run', 'workers', 'mcp', 'pairing', 'tokens', 'rate', 'rated', 'access', 'schedule', 'schedules', 'term', 'slack', 'discord', 'telegram', 'de', 'lock'];
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

const LOWER_LAYERS = ['agent', 'tools'];
const FORBIDDEN_DIRS = ['channels', 'queue', 'delivery', 'roles', 'cli'];
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
      "import * as e from \"node:fs\";",
      "import './side-effect.js';",
      "export { f } from './f.js';",
      "export * from '@slack/bolt';",
      "export type { G } from 'discord.js/typings';",
      "const h = await import('grammy');",
      "// import { x } from 'commented-out';",
      "/* import { y } from 'block-comment'; */",
      "const s = 'not an import from \"somewhere\"';",
    ].join('\n');
    expect(specifiers(sample).sort()).toEqual(['../b/b.js', './a.js', './f.js', './side-effect.js', '@slack/bolt', 'bullmq', 'discord.js/typings', 'grammy', 'node:fs'].sort());
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

  it('finds a cycle and only real cycles', () => {
    expect(findCycles(new Map([['a', ['b']], ['b', ['c']], ['c', []]]))).toEqual([]);
    expect(findCycles(new Map([['a', ['b', 'c']], ['b', ['c']], ['c', []]]))).toEqual([]);
    expect(findCycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]]))).toEqual([['a', 'b', 'c', 'a']]);
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

  it('src/agent and src/tools import nothing from channels, queue, delivery, roles, cli, or the platform and queue packages', () => {
    const violations: string[] = [];
    for (const [file, specs] of IMPORTS) {
      const layer = rel(file).split('/')[0]!;
      if (!LOWER_LAYERS.includes(layer)) continue;
      for (const spec of specs) {
        const target = resolveRelative(file, spec);
        if (target !== undefined) {
          const targetLayer = rel(target).split('/')[0]!;
          if (FORBIDDEN_DIRS.includes(targetLayer)) violations.push(`${rel(file)} imports ${spec}`);
        } else if (FORBIDDEN_PACKAGES.some((p) => spec === p || spec.startsWith(`${p}/`))) {
          violations.push(`${rel(file)} imports ${spec}`);
        }
      }
    }
    expect(violations).toEqual([]);
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
    expect(fsWrites(readFileSync(join(SRC, 'tools/workspace-files.ts'), 'utf8'))).toEqual(expect.arrayContaining(['link', 'mkdir', 'open', 'rename', 'unlink']));
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
        // An adapter (src/channels/<platform>/) may use queue and access types, never their values: it gets ChannelIntake and ChannelApprovals.
        const adapter = /^channels\/[^/]+\//.test(rel(file));
        const typeOnly = new RegExp(`import\\s+type\\s[^;]*?from\\s*['"]${spec.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}['"]`).test(source);
        // The Redis key module and the script registry are choke points every Redis user goes through, not ports: adapters use them too.
        const redisChokePoint = to === KEY_MODULE || to === SCRIPT_REGISTRY;
        if (adapter && /^(queue|access)\//.test(to) && !typeOnly && !redisChokePoint) violations.push(`${rel(file)} imports ${spec}: adapters see the intake and approvals only through their ports`);
      }
      if (/\bnew ApprovalDesk\(/.test(source) && !['roles/gateway.ts', 'roles/worker.ts', 'cli/chat.ts'].includes(rel(file))) violations.push(`${rel(file)} makes its own ApprovalDesk`);
    }
    expect(violations).toEqual([]);
    // The gateway hands its channels the gated port, never the desk itself.
    expect(readFileSync(join(SRC, 'roles/gateway.ts'), 'utf8')).toMatch(/approvals: gatedApprovals\(gate, approvals\)/);
  });

  it('Redis has one key module and one script registry: no other file builds a key string, defines a command or runs EVAL', () => {
    const violations: string[] = [];
    for (const file of FILES) {
      const source = readFileSync(file, 'utf8');
      if (rel(file) !== KEY_MODULE) for (const key of redisKeyStrings(source)) violations.push(`${rel(file)} builds a Redis key (${key}): add it to ${KEY_MODULE}`);
      if (rel(file) !== SCRIPT_REGISTRY) for (const way of scriptBypasses(source)) violations.push(`${rel(file)} uses ${way}: declare the script with defineScript and run it with runScript`);
    }
    expect(violations).toEqual([]);
    // The rules see what they allow (they are not silently finding nothing).
    const keyModule = readFileSync(join(SRC, KEY_MODULE), 'utf8');
    expect(redisKeyStrings(keyModule).length).toBeGreaterThan(20);
    expect(scriptBypasses(readFileSync(join(SRC, SCRIPT_REGISTRY), 'utf8'))).toContain('defineCommand');
    const declaring = FILES.filter((f) => /\bdefineScript\(\{/.test(readFileSync(f, 'utf8'))).map(rel).sort();
    expect(declaring).toEqual(['access/pairing-store.ts', 'access/token-budget.ts', 'channels/telegram/lease.ts', 'queue/approvals.ts', 'queue/scripts.ts', 'schedules/schedule-store.ts']);
  });

  it('has no circular imports in src', () => {
    const graph = new Map<string, string[]>();
    for (const [file, specs] of IMPORTS) {
      graph.set(
        rel(file),
        specs.map((s) => resolveRelative(file, s)).filter((t): t is string => t !== undefined).map(rel),
      );
    }
    expect(findCycles(graph)).toEqual([]);
  });
});
