import { describe, expect, it } from 'vitest';
import { buildTools } from '../../src/tools/index.js';
import { toModelTools } from '../../src/tools/schema.js';
import { Workspace } from '../../src/tools/workspace.js';

// Building the tools touches no disk: the root is created on first resolve.
const tools = toModelTools(buildTools(new Workspace('/nonexistent/switchboard-schema-test')));

describe('toModelTools', () => {
  it('describes the five tools as OpenAI function tools', () => {
    expect(tools.map((t) => t.type)).toEqual(['function', 'function', 'function', 'function', 'function']);
    expect(tools.map((t) => (t.type === 'function' ? t.function.name : ''))).toEqual(['list_files', 'read_file', 'write_file', 'edit_file', 'search_files']);
  });

  it('derives parameters from the zod schema, for input, without $schema or safe-integer noise', () => {
    const read = tools[1]!;
    if (read.type !== 'function') throw new Error('expected a function tool');
    expect(read.function.parameters).toEqual({
      type: 'object',
      properties: {
        path: { type: 'string', description: 'File path' },
        offset: { type: 'integer', minimum: 1, description: 'First line, 1-based' },
        limit: { type: 'integer', minimum: 1, description: 'Max lines' },
      },
      required: ['path'],
    });
    const list = tools[0]!;
    if (list.type !== 'function') throw new Error('expected a function tool');
    // A defaulted field is optional to the model.
    expect(list.function.parameters?.required).toBeUndefined();
    expect(JSON.stringify(tools)).not.toContain('$schema');
  });

  it('stays small: under ~600 tokens (~2,400 characters) for all five', () => {
    const size = JSON.stringify(tools).length;
    expect(size).toBeLessThan(2400);
    for (const tool of tools) {
      if (tool.type === 'function') expect(tool.function.description!.length).toBeLessThan(160);
    }
  });
});
