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

  it('finds a cycle and only real cycles', () => {
    expect(findCycles(new Map([['a', ['b']], ['b', ['c']], ['c', []]]))).toEqual([]);
    expect(findCycles(new Map([['a', ['b', 'c']], ['b', ['c']], ['c', []]]))).toEqual([]);
    expect(findCycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]]))).toEqual([['a', 'b', 'c', 'a']]);
    expect(findCycles(new Map([['a', ['a']]]))).toEqual([['a', 'a']]);
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
