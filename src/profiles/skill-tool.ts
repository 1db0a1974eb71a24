import path from 'node:path';
import { z } from 'zod';
import { readTextFile } from '../tools/fs-errors.js';
import { ToolError, type Tool } from '../tools/types.js';
import { entriesBelow, SKILL_FILE, SKILL_FILE_MAX_BYTES, SKILLS_AT, splitFrontMatter, type SkillShelf } from './skills.js';

/** Files named in one answer; the rest are counted (up to MAX_COUNTED) and can be listed with list_files. */
const MAX_LISTED = 200;
const MAX_COUNTED = 10_000;

const schema = z.object({
  name: z.string().describe('Skill name'),
});

export const LOAD_SKILL = 'load_skill';

/** Reads one skill: its SKILL.md instructions and where its other files are, for read_file and run_command. */
export function createLoadSkillTool(shelf: SkillShelf, options: { sandboxed: boolean }): Tool<typeof schema> {
  return {
    name: LOAD_SKILL,
    readOnly: true,
    description: "Read a skill's instructions and list its files.",
    schema,
    async execute({ name }, { signal }) {
      const skill = await shelf.get(name);
      if (!skill) {
        const names = (await shelf.current()).map((s) => s.name);
        throw new ToolError(names.length === 0 ? `no skill "${name}": none are installed` : `no skill "${name}"; the skills are: ${names.join(', ')}`);
      }
      const text = await readTextFile(path.join(skill.dir, SKILL_FILE), `${SKILLS_AT}/${name}/${SKILL_FILE}`, SKILL_FILE_MAX_BYTES, signal);
      const body = (splitFrontMatter(text)?.body ?? text).trim();

      const files: string[] = [];
      let total = 0;
      // Dot entries (.git, editor files) are no part of the procedure.
      for await (const entry of entriesBelow(skill.dir, { hidden: false })) {
        signal.throwIfAborted();
        if (entry.rel === SKILL_FILE || entry.dirent.isDirectory()) continue;
        if (++total > MAX_COUNTED) break;
        if (files.length < MAX_LISTED) files.push(entry.rel);
      }
      if (files.length === 0) return body;

      const runAt = options.sandboxed ? `/${SKILLS_AT}/${name}/<file> in run_command (read-only)` : `${skill.dir}/<file> in run_command (do not change them)`;
      const more = total > MAX_COUNTED ? `more than ${MAX_COUNTED - files.length}` : `${total - files.length}`;
      return [
        body,
        '',
        `[Files of skill "${name}": read them with read_file at ${SKILLS_AT}/${name}/<file>; run them at ${runAt}.]`,
        ...files.map((f) => `- ${f}`),
        ...(total > files.length ? [`… ${more} more (list_files ${SKILLS_AT}/${name} recursive)`] : []),
      ].join('\n');
    },
  };
}
