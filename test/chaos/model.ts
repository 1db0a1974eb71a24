import type { ChatMessage } from '../../src/agent/types.js';
import type { ReplyStep } from '../fakes/openai-server.js';

/**
 * The chaos runs' scripted model. Each user message is "m <token>"; a turn appends one line per
 * token to journal.txt with edit_file, then answers "done <tokens>". Every decision is read off
 * the transcript it is sent (never off a call counter), so a run that resumes, repeats or folds
 * gets the answer a careful model would give to exactly what it sees.
 */

export const JOURNAL = 'journal.txt';
/** The journal's last line: each edit replaces it with the new lines and itself. */
export const JOURNAL_END = 'END';
export const NARRATION = 'Appending to the journal.';

const USER_TEXT = /^m (\S+)$/;

export function userText(token: string): string {
  return `m ${token}`;
}

export interface TurnView {
  /** The tokens of the turn's user messages, in order. */
  tokens: string[];
  /** The turn's last tool result and the tool that produced it. */
  lastTool?: { name: string; content: string };
  /** Lines that edit_file calls of this turn reported appended ("Edited …"). */
  appended: Set<string>;
}

/**
 * The turn being answered: everything after the last assistant message without tool calls (a
 * final answer, or the note a failed turn leaves in history), or the whole conversation.
 * Messages that are not "m <token>" (the loop's nudges) are not the user's.
 */
export function currentTurn(messages: readonly ChatMessage[]): TurnView {
  let start = messages.length;
  while (start > 0 && !isFinal(messages[start - 1]!)) start--;
  const turn = messages.slice(start);
  const tokens: string[] = [];
  const calls = new Map<string, { name: string; arguments: string }>();
  const appended = new Set<string>();
  let lastTool: TurnView['lastTool'];
  for (const m of turn) {
    if (m.role === 'user') {
      const match = USER_TEXT.exec(String(m.content).trim());
      if (match) tokens.push(match[1]!);
    } else if (m.role === 'assistant') {
      for (const call of m.tool_calls ?? []) if (call.type === 'function') calls.set(call.id, call.function);
    } else if (m.role === 'tool') {
      const call = calls.get(m.tool_call_id);
      lastTool = { name: call?.name ?? '?', content: String(m.content) };
      if (call?.name === 'edit_file' && lastTool.content.startsWith('Edited ')) for (const t of linesOf(call.arguments)) appended.add(t);
    }
  }
  return { tokens, appended, ...(lastTool && { lastTool }) };
}

function isFinal(m: ChatMessage): boolean {
  return m.role === 'assistant' && (m.tool_calls?.length ?? 0) === 0;
}

/**
 * What the model replies to a turn: append the lines its edits have not appended yet, then
 * answer. A tool reported as interrupted (started, result unknown: what a resumed run says of a
 * side effect it cannot vouch for) is checked with read_file before anything is appended again.
 */
export function journalStep(turn: TurnView): ReplyStep {
  const last = turn.lastTool;
  const missingFrom = (done: ReadonlySet<string>) => turn.tokens.filter((t) => !done.has(t));
  const answerOrAppend = (missing: string[]): ReplyStep => (missing.length === 0 ? { content: `done ${turn.tokens.join(' ')}` } : appendLines(missing));
  if (last && /interrupted/i.test(last.content))
    return { content: 'Checking the journal first.', toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: JOURNAL }) }] };
  if (last?.name === 'read_file' && !last.content.startsWith('Error:'))
    return answerOrAppend(missingFrom(new Set(last.content.split('\n').map((l) => l.trim()))));
  if (last && !(last.name === 'edit_file' && last.content.startsWith('Edited '))) {
    return { content: `done-with-error ${turn.tokens.join(' ')}: ${last.content.split('\n')[0]}` };
  }
  return answerOrAppend(missingFrom(turn.appended));
}

function appendLines(tokens: readonly string[]): ReplyStep {
  const args = { path: JOURNAL, old_text: JOURNAL_END, new_text: `${tokens.join('\n')}\n${JOURNAL_END}` };
  return { content: NARRATION, toolCalls: [{ name: 'edit_file', arguments: JSON.stringify(args) }] };
}

/** The lines an edit_file call of this model appends (its new_text without the end marker). */
export function linesOf(editArguments: string): string[] {
  let args: { new_text?: unknown };
  try {
    args = JSON.parse(editArguments) as typeof args;
  } catch {
    return [];
  }
  return typeof args.new_text === 'string' ? args.new_text.split('\n').filter((l) => l !== JOURNAL_END) : [];
}
