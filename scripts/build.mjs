// The build step of `npm start` / `npm run gateway` / `npm run worker` (their pre-scripts): compile
// src/ to dist/ only when something changed, and always when dist/ is missing or not what the
// last build wrote.
//
// - Fast path: when the sources and configs (path, size, mtime) and every dist/ output are
//   exactly as the last successful build left them (dist/.build-stamp.json), tsc is not even
//   started and nothing is written.
// - Otherwise `tsc -p tsconfig.build.json`, which is incremental (dist/.tsbuildinfo): only changed
//   files are checked and re-emitted.
// - tsc's incremental mode trusts its buildinfo and does not re-emit a file whose output was
//   deleted or edited. So when an expected output is missing, or an output differs from what the
//   last build wrote while the buildinfo did not change, the buildinfo is dropped first and tsc
//   emits everything. (Deleting dist/ deletes the buildinfo with it: a full build.)
// - Outputs whose source is gone are removed, so dist/ never runs a deleted module.
//
// `npm run build` stays plain tsc (the Dockerfile runs it without this scripts/ folder).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const root = process.cwd();
const SRC = 'src';
const DIST = 'dist';
const BUILDINFO = join(DIST, '.tsbuildinfo');
const STAMP = join(DIST, '.build-stamp.json');
const CONFIGS = ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];

/** Every file under dir, as paths relative to the project root with '/' separators. */
function walk(dir) {
  const out = [];
  if (!existsSync(join(root, dir))) return out;
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    out.push(
      relative(root, join(entry.parentPath ?? entry.path, entry.name))
        .split(sep)
        .join('/'),
    );
  }
  return out.sort();
}

function fingerprint(paths) {
  const fp = {};
  for (const p of paths) {
    try {
      const s = statSync(join(root, p));
      fp[p] = [s.size, s.mtimeMs];
    } catch {
      fp[p] = null;
    }
  }
  return fp;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const isSource = (p) => /\.(ts|mts|cts)$/.test(p) && !/\.d\.(ts|mts|cts)$/.test(p);
/** dist/ files tsc writes for a source (sourceMap is on in tsconfig.json). */
function outputsOf(source) {
  const base = `${DIST}/${source.slice(SRC.length + 1)}`.replace(/\.(m|c)?ts$/, (_, m) => `.${m ?? ''}js`);
  return [base, `${base}.map`];
}

function state() {
  const sources = walk(SRC);
  const inputs = fingerprint([...sources, ...CONFIGS.filter((c) => existsSync(join(root, c)))]);
  const expected = sources.filter(isSource).flatMap(outputsOf);
  return { sources, inputs, expected, outputs: fingerprint(expected), buildinfo: fingerprint([BUILDINFO])[BUILDINFO] };
}

function readStamp() {
  try {
    return JSON.parse(readFileSync(join(root, STAMP), 'utf8'));
  } catch {
    return undefined;
  }
}

const before = state();
const stamp = readStamp();
if (stamp && before.buildinfo && same(stamp.inputs, before.inputs) && same(stamp.outputs, before.outputs) && same(stamp.buildinfo, before.buildinfo)) {
  process.exit(0); // up to date: nothing started, nothing written
}

const missing = before.expected.filter((p) => before.outputs[p] === null);
const tampered = stamp && before.buildinfo && same(stamp.buildinfo, before.buildinfo) && !same(stamp.outputs, before.outputs);
if (before.buildinfo && (missing.length > 0 || tampered)) rmSync(join(root, BUILDINFO), { force: true });

// Outputs of sources that no longer exist.
const wanted = new Set(before.expected);
for (const p of walk(DIST)) {
  if (/\.(m|c)?js(\.map)?$/.test(p) && !wanted.has(p)) rmSync(join(root, p), { force: true });
}

rmSync(join(root, STAMP), { force: true });
const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

// The inputs as they were before tsc read them: a source saved during the build is seen as changed next time.
const after = state();
writeFileSync(join(root, STAMP), `${JSON.stringify({ inputs: before.inputs, outputs: after.outputs, buildinfo: after.buildinfo })}\n`);
