import fs from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/tools/types.js';
import { makeSandbox, type Sandbox } from './sandbox.js';

/**
 * Whatever path the model sends — relative, absolute, `..`, %-encoded, NUL, odd unicode, through
 * symlinks planted inside that lead out — Workspace.resolve either refuses it with a ToolError or
 * returns a path whose every existing part really is inside the workspace.
 */

let sb: Sandbox;
let realRoot: string;

// Links an agent could have planted (run_command, an unpacked archive): out, up, to the root, looping, dangling.
const LINKS: [string, string][] = [
  ['out', '../outside'],
  ['up', '..'],
  ['abs', '/etc'],
  ['self', '.'],
  ['loop', 'loop'],
  ['chain', 'out'],
  ['inner', 'sub'],
  ['sub/back', '../..'],
  ['sub/root', '..'],
  ['sub/chained', '../chain'],
  ['dangling', '../outside/not-yet'],
  ['secret.txt', '../outside/secret.txt'],
  ['sub/tmp', '/tmp'],
];

beforeAll(async () => {
  sb = await makeSandbox();
  await sb.write('sub/file.txt', 'inside');
  await sb.write('plain.txt', 'inside');
  for (const [link, target] of LINKS) await fs.symlink(target, path.join(sb.root, link));
  realRoot = await fs.realpath(sb.root);
});
afterAll(async () => sb.cleanup());

function inside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** The real path of the longest part of `abs` that exists (what the OS would follow), or undefined. */
async function realExistingPrefix(abs: string): Promise<string> {
  for (let p = abs; ; p = path.dirname(p)) {
    try {
      return await fs.realpath(p);
    } catch {
      if (p === path.dirname(p)) return p;
    }
  }
}

const segment = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...LINKS.map(([l]) => path.basename(l)), 'sub', 'file.txt', 'plain.txt', 'new', '.', '..', '', '...') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '%2e%2e',
      '..%2f..',
      '%2F',
      '%00',
      '\u0000',
      '..\\..',
      'C:',
      '~',
      '\u202e..',
      'é',
      '\u00a0',
      '\ufeff',
      '..\u0000',
      '\ud800',
      '\udfff',
      '𝔘𝔫𝔦',
      '．．',
      '\u2024\u2024',
    ),
  },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-composite', minLength: 200, maxLength: 300 }) },
);
const separator = fc.constantFrom('/', '/', '/', '//', '\\', '/./');
// `<outside>/` stands for the absolute path of the sandbox's outside folder (known once it exists).
const lead = fc.constantFrom('', '', '', '/', './', '../', '~/', 'C:\\', 'C:/', '\\\\server\\share\\', '<outside>/');

const modelPath = fc
  .tuple(lead, fc.array(fc.tuple(segment, separator), { minLength: 1, maxLength: 8 }), fc.boolean())
  .map(([head, parts, trailing]) => head + parts.map(([s, sep], i) => (i < parts.length - 1 || trailing ? s + sep : s)).join(''));

describe('Workspace.resolve (property)', () => {
  it('never resolves a generated path to anywhere outside the workspace', async () => {
    let refused = 0;
    let resolved = 0;
    await fc.assert(
      fc.asyncProperty(modelPath, async (generated) => {
        const input = generated.replace('<outside>', sb.outside);
        let abs: string;
        try {
          abs = await sb.ws.resolve(input);
        } catch (err) {
          // Refusal is a ToolError (a result for the model), never another exception.
          expect(err).toBeInstanceOf(ToolError);
          refused++;
          return;
        }
        resolved++;
        expect(path.isAbsolute(abs)).toBe(true);
        expect(abs.includes('\u0000')).toBe(false);
        expect(inside(realRoot, abs)).toBe(true);
        expect(inside(realRoot, await realExistingPrefix(abs))).toBe(true);
      }),
      { seed: 1313, numRuns: 1500, endOnFailure: true },
    );
    // Both outcomes were exercised, or the generator is not testing anything.
    expect(refused).toBeGreaterThan(100);
    expect(resolved).toBeGreaterThan(100);
  }, 60_000);

  it('catches an escape when there is one (the checker itself)', async () => {
    expect(inside(realRoot, await realExistingPrefix(path.join(sb.root, 'out', 'secret.txt')))).toBe(false);
    expect(inside(realRoot, await realExistingPrefix(path.join(sb.root, 'sub', 'back', 'x')))).toBe(false);
    expect(inside(realRoot, await realExistingPrefix(path.join(sb.root, 'sub', 'file.txt')))).toBe(true);
  });
});
