import { mkdir, mkdtemp, realpath, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/lib/config-error.js';
import { createLogger } from '../../src/log.js';
import { createLoadSkillTool } from '../../src/profiles/skill-tool.js';
import { listingTokens, scanSkillFolders, SkillShelf, skillListing, skillMounts } from '../../src/profiles/skills.js';
import { ToolError } from '../../src/tools/types.js';

let base: string;
/** The skills folder most tests use. */
let shelfDir: string;
beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'switchboard-skills-')));
  shelfDir = path.join(base, 'skills');
  await mkdir(shelfDir);
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

async function put(rel: string, content: string): Promise<void> {
  const abs = path.join(base, rel);
  await mkdir(path.dirname(abs), { recursive: true });
  await writeFile(abs, content);
}

const skillMd = (name: string, description: string, body = `Do ${name}.\n`) => `---\nname: ${name}\ndescription: ${description}\n---\n${body}`;

/** A well-formed skill in `folder` (relative to base). */
const addSkill = (name: string, description = `The ${name} procedure.`, folder = 'skills') => put(`${folder}/${name}/SKILL.md`, skillMd(name, description));

function captureLog() {
  let raw = '';
  const log = createLogger('debug', 'test', { write: (s: string) => void (raw += s) });
  const warnings = () =>
    raw
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => l.level === 40)
      .map((l) => l.msg);
  return { log, warnings };
}

const signal = new AbortController().signal;

describe('scanSkillFolders', () => {
  it('finds a valid skill with its real folder, its description on one line and cut at 300 characters', async () => {
    await addSkill('beta', `${'x'.repeat(310)}`);
    await put('skills/alpha/SKILL.md', '---\nname: alpha\ndescription: >\n  Folded\n  over lines.\n---\nBody\n');
    await put('skills/README.md', 'not a skill');
    await put('skills/.hidden/SKILL.md', 'not even read');
    const { skills, errors } = await scanSkillFolders([shelfDir]);
    expect(errors).toEqual([]);
    expect(skills).toEqual([
      { name: 'alpha', description: 'Folded over lines.', dir: path.join(shelfDir, 'alpha') },
      { name: 'beta', description: `${'x'.repeat(299)}…`, dir: path.join(shelfDir, 'beta') },
    ]);
  });

  it('follows a skill folder that is itself a symlink, and resolves dir to its real path', async () => {
    await addSkill('linked', 'Linked in.', 'elsewhere');
    await symlink(path.join(base, 'elsewhere/linked'), path.join(shelfDir, 'linked'));
    const { skills, errors } = await scanSkillFolders([shelfDir]);
    expect(errors).toEqual([]);
    expect(skills).toEqual([{ name: 'linked', description: 'Linked in.', dir: path.join(base, 'elsewhere/linked') }]);
  });

  it('refuses each malformed skill with exactly one line naming it, and keeps the good one', async () => {
    await addSkill('good');
    await mkdir(path.join(shelfDir, 'no-file'));
    await put('skills/no-front/SKILL.md', '# Just markdown\n');
    await put('skills/bad-yaml/SKILL.md', '---\nname: [unclosed\n---\n');
    await put('skills/no-name/SKILL.md', '---\ndescription: Something.\n---\n');
    await put('skills/no-desc/SKILL.md', '---\nname: no-desc\n---\n');
    await put('skills/num-desc/SKILL.md', '---\nname: num-desc\ndescription: 42\n---\n');
    await put('skills/Upper/SKILL.md', skillMd('Upper', 'Bad name.'));
    const long = 'l'.repeat(65);
    await put(`skills/${long}/SKILL.md`, skillMd(long, 'Too long a name.'));
    await put('skills/mismatch/SKILL.md', skillMd('other', 'Named differently.'));
    await put('skills/big/SKILL.md', skillMd('big', 'Big.', 'x'.repeat(65 * 1024)));
    await addSkill('link-out');
    await symlink(path.join(base, 'secret.txt'), path.join(shelfDir, 'link-out/secret'));
    await put('secret.txt', 'secret');
    await addSkill('deep-link-out');
    await mkdir(path.join(shelfDir, 'deep-link-out/scripts/nested'), { recursive: true });
    await symlink('../../../../secret.txt', path.join(shelfDir, 'deep-link-out/scripts/nested/s'));
    await addSkill('dangling');
    await symlink(path.join(base, 'nowhere'), path.join(shelfDir, 'dangling/ref.md'));
    await addSkill('link-in');
    await put('skills/link-in/ref.md', 'ref');
    await symlink('ref.md', path.join(shelfDir, 'link-in/alias.md'));

    const { skills, errors } = await scanSkillFolders([shelfDir]);
    expect(skills.map((s) => s.name)).toEqual(['good', 'link-in']);
    const at = (sub: string) => `skills: ${shelfDir}/${sub}: `;
    const yamlLine = errors.find((e) => e.includes('/bad-yaml: '));
    expect(yamlLine).toBe(
      `${at('bad-yaml')}SKILL.md's front matter is not YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 1, column 16`,
    );
    expect(errors.filter((e) => e !== yamlLine).sort()).toEqual(
      [
        `${at('no-file')}no SKILL.md`,
        `${at('no-front')}SKILL.md has no front matter (a "---" line, name: and description:, a "---" line)`,
        `${at('no-name')}SKILL.md's front matter has no name (a string)`,
        `${at('no-desc')}SKILL.md's front matter has no description (a string)`,
        `${at('num-desc')}SKILL.md's front matter has no description (a string)`,
        `${at('Upper')}the name "Upper" may hold only lowercase letters, digits and hyphens`,
        `${at(long)}the name "${long}" is over 64 characters`,
        `${at('mismatch')}the skill is named "other" but its folder "mismatch": the Agent Skills format requires them to match`,
        `${at('big')}SKILL.md is 65 KB, over the 64 KB limit`,
        `${at('link-out')}secret is a symlink to outside the skill folder`,
        `${at('deep-link-out')}scripts/nested/s is a symlink to outside the skill folder`,
        `${at('dangling')}ref.md is a broken symlink`,
      ].sort(),
    );
    expect(errors).toHaveLength(13);
  });

  it('refuses a name found a second time in a later folder, naming the first, and says when a folder is missing', async () => {
    await addSkill('twin', 'First.', 'a');
    await addSkill('twin', 'Second.', 'b');
    const { skills, errors } = await scanSkillFolders([path.join(base, 'a'), path.join(base, 'b'), path.join(base, 'missing')]);
    expect(skills).toEqual([{ name: 'twin', description: 'First.', dir: path.join(base, 'a/twin') }]);
    expect(errors).toEqual([`skills: ${base}/b/twin: the name "twin" is already taken by ${base}/a/twin`, `skills: ${base}/missing: no such folder`]);
  });
});

describe('skillListing', () => {
  it('lists each skill on a line under a header saying how to use them; empty without skills', () => {
    const skills = [
      { name: 'alpha', description: 'Does A.', dir: '/s/alpha' },
      { name: 'beta', description: 'Does B.', dir: '/s/beta' },
    ];
    expect(skillListing(skills)).toBe(
      'Skills (procedures the operator installed; call load_skill with a name to read one before following it):\n- alpha: Does A.\n- beta: Does B.',
    );
    expect(skillListing([])).toBe('');
    expect(listingTokens([])).toBe(0);
    expect(listingTokens(skills)).toBeGreaterThan(20);
    expect(skillMounts(skills)).toEqual([
      { at: 'skills/alpha', dir: '/s/alpha' },
      { at: 'skills/beta', dir: '/s/beta' },
    ]);
  });
});

describe('SkillShelf', () => {
  const open = (log = captureLog().log, promptTokens = 1000) => SkillShelf.open([shelfDir], { promptTokens, log, label: 'helper' });

  it('refuses to open with a malformed skill or a missing folder: a ConfigError with one line each', async () => {
    await addSkill('good');
    await put('skills/broken/SKILL.md', 'no front matter');
    const err = await SkillShelf.open([shelfDir, path.join(base, 'missing')], { promptTokens: 1000, log: captureLog().log, label: 'helper' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).lines).toEqual([
      `skills: ${shelfDir}/broken: SKILL.md has no front matter (a "---" line, name: and description:, a "---" line)`,
      `skills: ${base}/missing: no such folder`,
    ]);
  });

  it('refuses to open when the listing is over promptTokens', async () => {
    await addSkill('alpha', 'a'.repeat(200));
    await addSkill('beta', 'b'.repeat(200));
    const tokens = listingTokens((await scanSkillFolders([shelfDir])).skills);
    const err = await open(undefined, 60).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).lines).toEqual([
      `agents: agent "helper": its skills list is about ${tokens} tokens, over SKILLS_PROMPT_TOKENS=60: shorten descriptions or offer fewer skills`,
    ]);
  });

  it('picks up a skill added, edited or removed after open on the next current(), without a restart', async () => {
    await addSkill('alpha');
    const shelf = await open();
    expect((await shelf.current()).map((s) => s.name)).toEqual(['alpha']);

    await addSkill('beta', 'Added later.');
    expect((await shelf.current()).map((s) => [s.name, s.description])).toEqual([
      ['alpha', 'The alpha procedure.'],
      ['beta', 'Added later.'],
    ]);

    // Same size, and the mtime put back: the change time still tells.
    await put('skills/alpha/SKILL.md', skillMd('alpha', 'The ALPHA procedure.'));
    const then = new Date(Date.now() - 60_000);
    await utimes(path.join(shelfDir, 'alpha/SKILL.md'), then, then);
    expect((await shelf.get('alpha'))?.description).toBe('The ALPHA procedure.');

    await rm(path.join(shelfDir, 'beta'), { recursive: true });
    expect((await shelf.current()).map((s) => s.name)).toEqual(['alpha']);
    expect(await shelf.get('beta')).toBeUndefined();
  });

  it('rereads nothing when nothing changed', async () => {
    await addSkill('alpha');
    const shelf = await open();
    const first = await shelf.current();
    expect(await shelf.current()).toBe(first);
  });

  it('on a rescan, logs a malformed skill and leaves it out instead of throwing', async () => {
    await addSkill('alpha');
    const { log, warnings } = captureLog();
    const shelf = await open(log);
    await put('skills/broken/SKILL.md', '---\nname: broken\n---\n');
    await put('skills/alpha/SKILL.md', '---\nname: alpha\n---\n');
    expect(await shelf.current()).toEqual([]);
    expect(warnings()).toEqual([
      `skills: ${shelfDir}/alpha: SKILL.md's front matter has no description (a string) (left out)`,
      `skills: ${shelfDir}/broken: SKILL.md's front matter has no description (a string) (left out)`,
    ]);
  });

  it('on a rescan over promptTokens, keeps the skills in name order that fit and names the rest in a warning', async () => {
    await addSkill('alpha', 'Short.');
    const { log, warnings } = captureLog();
    const shelf = await open(log, 60);
    await addSkill('beta', 'b'.repeat(200));
    await addSkill('gamma', 'Short too.');
    expect((await shelf.current()).map((s) => s.name)).toEqual(['alpha', 'gamma']);
    expect(warnings()).toEqual([
      'agents: agent "helper": its skills list is over SKILLS_PROMPT_TOKENS=60: left out beta; shorten descriptions or offer fewer skills',
    ]);
  });
});

describe('load_skill', () => {
  async function tool(sandboxed: boolean) {
    await put('skills/hello/SKILL.md', skillMd('hello', 'Says hello.', '\n# Hello\n\nRun scripts/hello.sh.\n'));
    await put('skills/hello/scripts/hello.sh', 'echo hello\n');
    await put('skills/hello/reference/notes.md', 'notes');
    await put('skills/hello/.git/HEAD', 'ref: main');
    await addSkill('other');
    return createLoadSkillTool(await SkillShelf.open([shelfDir], { promptTokens: 1000, log: captureLog().log, label: 'helper' }), { sandboxed });
  }

  it('returns the body without its front matter and the skill’s other files, at their sandbox paths', async () => {
    const t = await tool(true);
    expect(t.name).toBe('load_skill');
    expect(t.readOnly).toBe(true);
    expect(await t.execute({ name: 'hello' }, { signal })).toBe(
      [
        '# Hello',
        '',
        'Run scripts/hello.sh.',
        '',
        '[Files of skill "hello": read them with read_file at skills/hello/<file>; run them at /skills/hello/<file> in run_command (read-only).]',
        '- reference/notes.md',
        '- scripts/hello.sh',
      ].join('\n'),
    );
  });

  it('without a sandbox, names the host path for run_command', async () => {
    const out = await (await tool(false)).execute({ name: 'hello' }, { signal });
    expect(out).toContain(`run them at ${shelfDir}/hello/<file> in run_command`);
  });

  it('a skill with no other files gives its body alone', async () => {
    expect(await (await tool(true)).execute({ name: 'other' }, { signal })).toBe('Do other.');
  });

  it('an unknown name is a ToolError listing the skills there are', async () => {
    const err = await (await tool(true)).execute({ name: 'nope' }, { signal }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect((err as Error).message).toBe('no skill "nope"; the skills are: hello, other');
  });
});
