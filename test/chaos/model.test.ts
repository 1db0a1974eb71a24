import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/agent/types.js';
import { currentTurn, journalStep, linesOf } from './model.js';

const user = (token: string): ChatMessage => ({ role: 'user', content: `m ${token}` });
const final = (text: string): ChatMessage => ({ role: 'assistant', content: text });
const asks = (id: string, name: string, args: object): ChatMessage => ({
  role: 'assistant',
  content: 'Appending to the journal.',
  tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
});
const result = (id: string, content: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content });
const edit = (lines: string[]) => ({ path: 'journal.txt', old_text: 'END', new_text: `${lines.join('\n')}\nEND` });
const step = (messages: ChatMessage[]) => journalStep(currentTurn([{ role: 'system', content: 'sys' }, ...messages]));
const appends = (messages: ChatMessage[]) => linesOf(step(messages).toolCalls?.[0]?.arguments ?? '{}');

describe('the chaos model answers from the transcript alone', () => {
  it('appends one line per message of the turn (folded ones too), then answers them all', () => {
    const history = [
      user('a'),
      asks('c1', 'edit_file', edit(['a'])),
      result('c1', 'Edited journal.txt at line 1: 1 line(s) replaced by 2 line(s) (+2 bytes)'),
      final('done a'),
    ];
    expect(appends([...history, user('b'), user('c')])).toEqual(['b', 'c']);
    expect(step([...history, user('b'), asks('c2', 'edit_file', edit(['b'])), result('c2', 'Edited journal.txt at line 2: …')])).toEqual({ content: 'done b' });
  });

  it('a re-run from scratch appends again (it cannot know), a failed turn in history ends that turn', () => {
    expect(appends([user('a')])).toEqual(['a']);
    expect(appends([user('a'), final('(No answer was given to this: the run ended failed, worker_crashed.)'), user('b')])).toEqual(['b']);
  });

  it('an interrupted tool is checked with read_file, and only what is missing is appended', () => {
    const interrupted = [
      user('a'),
      user('b'),
      asks('c1', 'edit_file', edit(['a', 'b'])),
      result('c1', 'Error: interrupted: it may or may not have taken effect; check before repeating it'),
    ];
    expect(step(interrupted).toolCalls).toEqual([{ name: 'read_file', arguments: '{"path":"journal.txt"}' }]);
    const read = (text: string) => [...interrupted, asks('c2', 'read_file', { path: 'journal.txt' }), result('c2', text)];
    expect(step(read('a\nb\nEND'))).toEqual({ content: 'done a b' });
    expect(appends(read('a\nEND'))).toEqual(['b']);
  });

  it('any other tool error ends the turn with an answer that says so', () => {
    expect(step([user('a'), asks('c1', 'edit_file', edit(['a'])), result('c1', 'Error: old_text not found in journal.txt\nmore')])).toEqual({
      content: 'done-with-error a: Error: old_text not found in journal.txt',
    });
  });
});
