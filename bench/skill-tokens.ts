import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getEncoding } from 'js-tiktoken';
import { createLogger } from '../src/log.js';
import { SkillShelf, skillListing } from '../src/profiles/skills.js';
import { createLoadSkillTool } from '../src/profiles/skill-tool.js';
import { DEFAULT_SYSTEM_PROMPT } from '../src/agent/prompt.js';
import { buildTools, toModelTools, Workspace } from '../src/tools/index.js';

const encoding = getEncoding('o200k_base');
const tokens = (value: unknown) => encoding.encode(typeof value === 'string' ? value : JSON.stringify(value)).length;

const VERBS = ['triage', 'refund', 'escalate', 'rotate', 'deploy', 'rollback', 'onboard', 'offboard', 'audit', 'invoice'];
const NOUNS = ['ticket', 'certificate'];

/**
 * The first request of a turn with 20 skills installed, as the worker builds it: the system
 * prompt with the skills listing (SkillShelf + skillListing, the code a turn runs) and the tool
 * schemas with load_skill — against no skills, and against putting every SKILL.md body in the
 * prompt (what loading skills eagerly would cost). Each skill has a ~200-character description
 * and a ~3 KB body. Counted with o200k_base like the rest of the prompt figures.
 */
export async function skillPromptCost(
  count = 20,
): Promise<{ skills: number; none: number; listed: number; inlined: number; perSkill: number; loadSkillTool: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'sb-bench-skills-'));
  try {
    const bodies: string[] = [];
    for (let i = 0; i < count; i++) {
      const name = `${VERBS[i % VERBS.length]}-${NOUNS[Math.floor(i / VERBS.length) % NOUNS.length]}`;
      const description = `${name.replace('-', ' a ')}: check who asked and what it concerns, follow the team's procedure step by step, run the helper script, and write down what was done in the log with a link to the ${NOUNS[i % 2]}.`;
      const body = Array.from(
        { length: 30 },
        (_, step) =>
          `${step + 1}. For ${name}, read \`reference/step-${step}.md\`, then run \`scripts/step-${step}.sh\` with the id and check its output before going on.`,
      ).join('\n');
      bodies.push(body);
      await mkdir(join(dir, name), { recursive: true });
      await writeFile(join(dir, name, 'SKILL.md'), `---\nname: ${name}\ndescription: ${JSON.stringify(description)}\n---\n${body}\n`);
    }
    const shelf = await SkillShelf.open([dir], { promptTokens: 100_000, log: createLogger('silent'), label: 'bench' });
    const skills = await shelf.current();
    const ws = new Workspace(dir);
    const tools = buildTools(ws);
    const base = tokens(DEFAULT_SYSTEM_PROMPT) + tokens(toModelTools(tools));
    const loadSkill = createLoadSkillTool(shelf, { sandboxed: true });
    const listed = tokens(`${DEFAULT_SYSTEM_PROMPT}\n\n${skillListing(skills)}`) + tokens(toModelTools([...tools, loadSkill]));
    const inlined = tokens(`${DEFAULT_SYSTEM_PROMPT}\n\n${bodies.join('\n\n')}`) + tokens(toModelTools(tools));
    return {
      skills: skills.length,
      none: base,
      listed,
      inlined,
      perSkill: Math.round((listed - base) / skills.length),
      loadSkillTool: tokens(toModelTools([loadSkill])),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
