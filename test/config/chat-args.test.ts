import { describe, expect, it } from 'vitest';
import { spawnNode } from '../helpers/processes.js';

describe('npm run chat: bad arguments', () => {
  it.each([
    [['--bogus'], "Unknown option '--bogus'"],
    [['--session'], "'-s, --session <value>' argument missing"],
  ])('%j is a usage error (exit 2) naming the problem, never a crash', async (args, problem) => {
    const chat = spawnNode('src/cli/chat.ts', args, {});
    const code = await chat.exited;
    expect([code, chat.stderr()]).toEqual([2, expect.stringContaining(problem)]);
    expect(chat.stderr()).toContain('usage: npm run chat');
    expect(chat.stderr()).not.toContain('fatal');
  });
});
