import type { Dirent } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { estimateTextTokens } from '../agent/budget.js';
import { ConfigError } from '../lib/config-error.js';
import { clip, formatBytes } from '../lib/text.js';
import type { Logger } from '../log.js';
import { errnoCode } from '../tools/workspace.js';

/**
 * Operator-installed skills in the Agent Skills format: one folder per skill, holding `SKILL.md`
 * (YAML front matter with `name` and `description`, then the instructions) and any scripts and
 * reference files. Runs see them read-only at `skills/<name>` (see `skillMounts`).
 */
export interface Skill {
  name: string;
  /** One line, at most DESCRIPTION_MAX_CHARS (cut with '…'). */
  description: string;
  /** The absolute real path of the skill folder. */
  dir: string;
}

/** Where a run's workspace shows the skills: `skills/<name>` (and `/skills/<name>` in the sandbox). */
export const SKILLS_AT = 'skills';
export const SKILL_FILE = 'SKILL.md';
export const SKILL_FILE_MAX_BYTES = 64 * 1024;
const DESCRIPTION_MAX_CHARS = 300;
const NAME = /^[a-z0-9-]+$/;
const NAME_MAX_CHARS = 64;
const FRONT_MATTER = /^\uFEFF?---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/;

/** Every skill in `folders` (absolute paths), sorted by name, and one line per folder or skill refused. */
export async function scanSkillFolders(folders: readonly string[]): Promise<{ skills: Skill[]; errors: string[] }> {
  const skills: Skill[] = [];
  const errors: string[] = [];
  const taken = new Map<string, string>();
  for (const folder of folders) {
    let entries: Dirent[];
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch (err) {
      const code = errnoCode(err);
      errors.push(
        `skills: ${folder}: ${code === 'ENOENT' ? 'no such folder' : code === 'ENOTDIR' ? 'not a folder' : `cannot read it (${code ?? String(err)})`}`,
      );
      continue;
    }
    for (const name of entries.map((e) => e.name).sort()) {
      if (name.startsWith('.')) continue;
      const where = path.join(folder, name);
      const found = await readSkill(where, name).catch((err: unknown) => `cannot read it (${errnoCode(err) ?? String(err)})`);
      if (found === undefined) continue;
      if (typeof found === 'string') {
        errors.push(`skills: ${where}: ${found}`);
        continue;
      }
      const first = taken.get(found.name);
      if (first !== undefined) {
        errors.push(`skills: ${where}: the name "${found.name}" is already taken by ${first}`);
        continue;
      }
      taken.set(found.name, where);
      skills.push(found);
    }
  }
  skills.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { skills, errors };
}

/** The skill in folder `where`, why it is refused, or undefined when `where` is no folder (a stray file). */
async function readSkill(where: string, folderName: string): Promise<Skill | string | undefined> {
  const info = await stat(where).catch(() => undefined);
  if (info === undefined) return 'a broken symlink';
  if (!info.isDirectory()) return undefined;
  const dir = await realpath(where);
  // Checked before SKILL.md is read, so no read follows a link out of the folder.
  const badLink = await linkLeavingFolder(dir);
  if (badLink !== undefined) return badLink;

  const file = path.join(dir, SKILL_FILE);
  const fileInfo = await stat(file).catch(() => undefined);
  if (fileInfo === undefined) return `no ${SKILL_FILE}`;
  if (!fileInfo.isFile()) return `${SKILL_FILE} is not a file`;
  if (fileInfo.size > SKILL_FILE_MAX_BYTES) return `${SKILL_FILE} is ${formatBytes(fileInfo.size)}, over the ${formatBytes(SKILL_FILE_MAX_BYTES)} limit`;
  const parts = splitFrontMatter(await readFile(file, 'utf8'));
  if (parts === undefined) return `${SKILL_FILE} has no front matter (a "---" line, name: and description:, a "---" line)`;

  let meta: unknown;
  try {
    meta = parse(parts.frontMatter);
  } catch (err) {
    return `${SKILL_FILE}'s front matter is not YAML: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]!.replace(/:$/, '')}`;
  }
  const { name, description } = (typeof meta === 'object' && meta !== null ? meta : {}) as Record<string, unknown>;
  if (typeof name !== 'string' || name === '') return `${SKILL_FILE}'s front matter has no name (a string)`;
  if (typeof description !== 'string' || description.trim() === '') return `${SKILL_FILE}'s front matter has no description (a string)`;
  if (!NAME.test(name)) return `the name "${name}" may hold only lowercase letters, digits and hyphens`;
  if (name.length > NAME_MAX_CHARS) return `the name "${name}" is over ${NAME_MAX_CHARS} characters`;
  if (name !== folderName) return `the skill is named "${name}" but its folder "${folderName}": the Agent Skills format requires them to match`;
  // Folded YAML keeps newlines; the listing gives each skill one line.
  return { name, description: clip(description.replace(/\s+/g, ' ').trim(), DESCRIPTION_MAX_CHARS), dir };
}

/** Why a symlink below `dir` is refused (dangling, or resolving outside `dir`), or undefined. */
async function linkLeavingFolder(dir: string): Promise<string | undefined> {
  for await (const entry of entriesBelow(dir, { hidden: true })) {
    if (!entry.dirent.isSymbolicLink()) continue;
    const target = await realpath(entry.abs).catch(() => undefined);
    if (target === undefined) return `${entry.rel} is a broken symlink`;
    if (!isInside(dir, target)) return `${entry.rel} is a symlink to outside the skill folder`;
  }
  return undefined;
}

/**
 * Every entry below `dir`, depth first, name-sorted, with a '/'-separated `rel`; links are reported,
 * never entered. `hidden: false` leaves out dot entries and all below them (.git).
 */
export async function* entriesBelow(dir: string, options: { hidden: boolean }, prefix = ''): AsyncGenerator<{ rel: string; abs: string; dirent: Dirent }> {
  const entries = await readdir(path.join(dir, prefix), { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const dirent of entries) {
    if (!options.hidden && dirent.name.startsWith('.')) continue;
    const rel = prefix === '' ? dirent.name : `${prefix}/${dirent.name}`;
    yield { rel, abs: path.join(dir, rel), dirent };
    if (dirent.isDirectory()) yield* entriesBelow(dir, options, rel);
  }
}

/** SKILL.md cut into its front matter (YAML text) and the body after it; undefined without front matter. */
export function splitFrontMatter(text: string): { frontMatter: string; body: string } | undefined {
  const match = FRONT_MATTER.exec(text);
  return match ? { frontMatter: match[1] ?? '', body: text.slice(match[0].length) } : undefined;
}

/** What ends the system prompt: one line per skill; empty without skills. */
export function skillListing(skills: readonly Skill[]): string {
  if (skills.length === 0) return '';
  const lines = skills.map((s) => `- ${s.name}: ${s.description}`);
  return ['Skills (procedures the operator installed; call load_skill with a name to read one before following it):', ...lines].join('\n');
}

export function listingTokens(skills: readonly Skill[]): number {
  return estimateTextTokens(skillListing(skills));
}

/** The workspace's read-only mounts for `skills`: each at `skills/<name>`. */
export function skillMounts(skills: readonly Skill[]): { at: string; dir: string }[] {
  return skills.map((s) => ({ at: `${SKILLS_AT}/${s.name}`, dir: s.dir }));
}

export interface SkillShelfOptions {
  /** SKILLS_PROMPT_TOKENS: what the listing may add to every system prompt. */
  promptTokens: number;
  log: Logger;
  /** Who offers the skills (the agent's name), for messages. */
  label: string;
}

/**
 * The skills of some folders as they are now. A start with a malformed skill or an overlong
 * listing fails (the operator is there to fix it); after that, changes are picked up without a
 * restart, and a skill broken while running is logged and left out rather than failing runs.
 */
export class SkillShelf {
  readonly folders: readonly string[];
  #options: SkillShelfOptions;
  #skills: readonly Skill[];
  #stamp: string;
  #refresh: Promise<readonly Skill[]> | undefined;

  private constructor(folders: readonly string[], options: SkillShelfOptions, skills: readonly Skill[], stamp: string) {
    this.folders = folders;
    this.#options = options;
    this.#skills = skills;
    this.#stamp = stamp;
  }

  static async open(folders: readonly string[], options: SkillShelfOptions): Promise<SkillShelf> {
    // Stamped before the scan: a change made during it is seen by the next current().
    const stamp = await stampOf(folders);
    const { skills, errors } = await scanSkillFolders(folders);
    const tokens = listingTokens(skills);
    if (tokens > options.promptTokens) {
      errors.push(
        `agents: agent "${options.label}": its skills list is about ${tokens} tokens, over SKILLS_PROMPT_TOKENS=${options.promptTokens}: shorten descriptions or offer fewer skills`,
      );
    }
    if (errors.length > 0) throw new ConfigError(errors);
    return new SkillShelf(folders, options, skills, stamp);
  }

  /** The skills now: rescanned only when a folder, skill folder or SKILL.md changed since the last look. */
  current(): Promise<readonly Skill[]> {
    this.#refresh ??= this.#refreshIfChanged().finally(() => {
      this.#refresh = undefined;
    });
    return this.#refresh;
  }

  async get(name: string): Promise<Skill | undefined> {
    return (await this.current()).find((s) => s.name === name);
  }

  async #refreshIfChanged(): Promise<readonly Skill[]> {
    const { log, label } = this.#options;
    try {
      const stamp = await stampOf(this.folders);
      if (stamp === this.#stamp) return this.#skills;
      const { skills, errors } = await scanSkillFolders(this.folders);
      for (const line of errors) log.warn({ agent: label }, `${line} (left out)`);
      this.#skills = this.#fitting(skills);
      this.#stamp = stamp;
    } catch (err) {
      log.warn({ agent: label, err: err instanceof Error ? err.message : String(err) }, 'skills: could not rescan; keeping the skills as they were');
    }
    return this.#skills;
  }

  /** The skills, in name order, whose listing stays within promptTokens; the rest are named in a warning. */
  #fitting(skills: readonly Skill[]): readonly Skill[] {
    const { promptTokens, log, label } = this.#options;
    if (listingTokens(skills) <= promptTokens) return skills;
    const kept: Skill[] = [];
    const left: string[] = [];
    for (const skill of skills) {
      if (listingTokens([...kept, skill]) <= promptTokens) kept.push(skill);
      else left.push(skill.name);
    }
    log.warn(
      { agent: label },
      `agents: agent "${label}": its skills list is over SKILLS_PROMPT_TOKENS=${promptTokens}: left out ${left.join(', ')}; shorten descriptions or offer fewer skills`,
    );
    return kept;
  }
}

/** A cheap fingerprint of what a scan reads first: each folder, its entries, each entry's SKILL.md. */
async function stampOf(folders: readonly string[]): Promise<string> {
  const parts: string[] = [];
  for (const folder of folders) {
    parts.push(folder, await statStamp(folder));
    const names = await readdir(folder).catch(() => []);
    for (const name of names.sort()) {
      if (name.startsWith('.')) continue;
      const sub = path.join(folder, name);
      parts.push(name, await statStamp(sub), await statStamp(path.join(sub, SKILL_FILE)));
    }
  }
  return parts.join('\n');
}

async function statStamp(file: string): Promise<string> {
  try {
    const s = await stat(file, { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch (err) {
    return errnoCode(err) ?? 'error';
  }
}

function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
