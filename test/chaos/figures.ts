import { MAY_REPEAT_NOTE, PLACEHOLDER } from '../../src/channels/kit/pieces.js';
import type { BotMessage } from '../fakes/telegram-server.js';
import type { Freeze, Kill } from './scheduler.js';

/** One DM the run sent: its token is unique, `seq` is its place among its session's messages. */
export interface SentMessage {
  token: string;
  session: string;
  chatId: number;
  seq: number;
}

export interface FigureInputs {
  messages: readonly SentMessage[];
  /** Everything the bot posted (the fake Telegram's `sent`), in order. */
  posts: readonly BotMessage[];
  /** chat id → journal.txt at the end. */
  journals: ReadonlyMap<number, string>;
  kills: readonly Kill[];
  freezes: readonly Freeze[];
  runsStarted: number;
  modelCalls: number;
}

export interface Figures {
  messages: number;
  sessions: number;
  /** "run started" lines of the workers: turns claimed, re-runs included. */
  runs: number;
  modelCalls: number;
  kills: { total: number; model: number; tool: number; toolLineWritten: number; delivery: number };
  freezes: number;
  answeredOnce: number;
  /** Tokens in no answer and no notice. */
  lost: number;
  /** Tokens answered two times or more. */
  duplicates: number;
  /** Answers sent again with the may-repeat note (their earlier attempt's outcome unknown); `seenTwice`: messages whose answer the person then had twice (counted in `duplicates`). */
  notedRepeats: { sent: number; seenTwice: number };
  /** Messages answered twice without the note saying it may repeat: the duplicates nobody was told about. */
  unannouncedDuplicates: number;
  /** Tokens with more than one line in their journal. */
  repeatedSideEffects: number;
  /** Per session, adjacent pairs out of send order in the journal and in the answers. */
  orderViolations: number;
  /** Answers that say the model hit a tool error. */
  doneWithError: number;
  /** Tokens answered "done" whose line is not in the journal. */
  answeredWithoutLine: number;
  /** Notices (honest lines) the bot posted instead of an answer, with the tokens they stand for. */
  notices: { chatId: number; text: string; tokens: string[] }[];
  /** Tokens given up on with a notice that asks to send them again although their line had been written. */
  sendAgainAfterWrite: number;
  /** Status messages (sent silently) never deleted. */
  leftoverStatus: number;
  /** Placeholders never edited into a piece (a worker killed after posting one, before it learnt its id): an orphan "…", never an answer. */
  orphanPlaceholders: number;
  /** A few of the tokens behind each non-zero target figure, for looking them up in the logs. */
  examples: { lost: string[]; duplicates: string[]; repeated: string[] };
}

const TOKEN = /\bs\d+-m\d+-[0-9a-z]+\b/g;
const EXAMPLES = 5;

export const tokensIn = (text: string): string[] => text.match(TOKEN) ?? [];

/** The four figures the durable-runs work must bring to zero. */
export function targetsMet(f: Figures): boolean {
  return f.lost === 0 && f.duplicates === 0 && f.repeatedSideEffects === 0 && f.orderViolations === 0;
}

/** What an answer says, without the may-repeat note a resent one leads with: it is still an answer, and a second one is a duplicate. */
const answerText = (p: BotMessage): string => (p.text.startsWith(MAY_REPEAT_NOTE) ? p.text.slice(MAY_REPEAT_NOTE.length) : p.text);
const isAnswer = (p: BotMessage): boolean => !p.silent && answerText(p).startsWith('done');

/** How many answers name each token. */
function countAnswers(posts: readonly BotMessage[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const a of posts.filter(isAnswer)) for (const t of new Set(tokensIn(a.text))) counts.set(t, (counts.get(t) ?? 0) + 1);
  return counts;
}

/** Tokens with neither an answer nor a notice standing for them (what "lost" counts). */
export function unaccounted(messages: readonly SentMessage[], posts: readonly BotMessage[]): string[] {
  const answerCount = countAnswers(posts);
  const noticed = new Set(attributeNotices(messages, posts, answerCount).flatMap((n) => n.tokens));
  return messages.map((m) => m.token).filter((t) => !answerCount.has(t) && !noticed.has(t));
}

export function computeFigures(input: FigureInputs): Figures {
  const answers = input.posts.filter(isAnswer);
  const answerCount = countAnswers(input.posts);
  const lines = new Map<string, number>();
  for (const text of input.journals.values()) for (const t of tokensIn(text)) lines.set(t, (lines.get(t) ?? 0) + 1);

  const notices = attributeNotices(input.messages, input.posts, answerCount);
  const tokens = input.messages.map((m) => m.token);
  const doneTokens = answers.filter((a) => !answerText(a).startsWith('done-with-error')).flatMap((a) => tokensIn(a.text));
  const noted = answers.filter((a) => a.text.startsWith(MAY_REPEAT_NOTE));
  const notedCount = countAnswers(noted);
  const lost = unaccounted(input.messages, input.posts);
  const duplicates = tokens.filter((t) => (answerCount.get(t) ?? 0) > 1);
  const repeated = tokens.filter((t) => (lines.get(t) ?? 0) > 1);
  const count = (phase: Kill['phase']) => input.kills.filter((k) => k.phase === phase).length;

  return {
    messages: tokens.length,
    sessions: new Set(input.messages.map((m) => m.session)).size,
    runs: input.runsStarted,
    modelCalls: input.modelCalls,
    kills: {
      total: input.kills.length,
      model: count('model'),
      tool: count('tool'),
      toolLineWritten: input.kills.filter((k) => k.effect === 'written').length,
      delivery: count('delivery'),
    },
    freezes: input.freezes.length,
    answeredOnce: tokens.filter((t) => answerCount.get(t) === 1).length,
    lost: lost.length,
    duplicates: duplicates.length,
    notedRepeats: { sent: noted.length, seenTwice: duplicates.filter((t) => notedCount.has(t)).length },
    unannouncedDuplicates: tokens.filter((t) => (answerCount.get(t) ?? 0) - (notedCount.get(t) ?? 0) > 1).length,
    repeatedSideEffects: repeated.length,
    orderViolations: orderViolations(input, answers),
    doneWithError: answers.filter((a) => answerText(a).startsWith('done-with-error')).length,
    answeredWithoutLine: new Set(doneTokens.filter((t) => !lines.has(t))).size,
    notices,
    sendAgainAfterWrite: notices
      .filter((n) => /send it again/i.test(n.text))
      .flatMap((n) => n.tokens)
      .filter((t) => lines.has(t)).length,
    leftoverStatus: input.posts.filter((p) => p.silent && !p.deleted).length,
    orphanPlaceholders: input.posts.filter((p) => !p.silent && !p.deleted && p.raw === PLACEHOLDER).length,
    examples: { lost: lost.slice(0, EXAMPLES), duplicates: duplicates.slice(0, EXAMPLES), repeated: repeated.slice(0, EXAMPLES) },
  };
}

/**
 * A notice names no message, but a session's turns are answered in order, and the only notice
 * these runs can get (the fake model always answers) is the line for a message given up on after
 * too many crashed runs, which is a turn of its own: so a notice stands for the first message
 * after the ones answered before it that has no answer.
 */
function attributeNotices(messages: readonly SentMessage[], posts: readonly BotMessage[], answerCount: ReadonlyMap<string, number>): Figures['notices'] {
  const out: Figures['notices'] = [];
  for (const chatId of new Set(messages.map((m) => m.chatId))) {
    const order = messages
      .filter((m) => m.chatId === chatId)
      .sort((a, b) => a.seq - b.seq)
      .map((m) => m.token);
    let cursor = 0;
    // A placeholder (filled later, or an orphan) stands for no message: only its piece does.
    for (const post of posts.filter((p) => p.chatId === chatId && !p.silent && p.raw !== PLACEHOLDER)) {
      if (isAnswer(post)) {
        cursor = Math.max(cursor, ...tokensIn(post.text).map((t) => order.indexOf(t) + 1));
        continue;
      }
      const at = order.findIndex((t, i) => i >= cursor && !answerCount.has(t));
      if (at >= 0) cursor = at + 1;
      out.push({ chatId, text: post.text, tokens: at >= 0 ? [order[at]!] : [] });
    }
  }
  return out;
}

function orderViolations(input: FigureInputs, answers: readonly BotMessage[]): number {
  const seqOf = new Map(input.messages.map((m) => [m.token, m]));
  const descents = (tokens: readonly string[], session: string): number => {
    const seen = new Set<string>();
    const seqs: number[] = [];
    for (const t of tokens) {
      const m = seqOf.get(t);
      if (!m || m.session !== session || seen.has(t)) continue;
      seen.add(t);
      seqs.push(m.seq);
    }
    return seqs.filter((s, i) => i > 0 && s < seqs[i - 1]!).length;
  };
  let total = 0;
  for (const session of new Set(input.messages.map((m) => m.session))) {
    const chatId = input.messages.find((m) => m.session === session)!.chatId;
    total += descents(tokensIn(input.journals.get(chatId) ?? ''), session);
    total += descents(
      answers.filter((a) => a.chatId === chatId).flatMap((a) => tokensIn(a.text)),
      session,
    );
  }
  return total;
}

/** The figures as an aligned table, then the notices and kills worth reading. */
export function formatFigures(f: Figures, kills: readonly Kill[]): string {
  const k = f.kills;
  const rows: [string, string | number][] = [
    ['messages (sessions)', `${f.messages} (${f.sessions})`],
    ['runs started (model calls)', `${f.runs} (${f.modelCalls})`],
    ['kills: model / tool / delivery', `${k.total}: ${k.model} / ${k.tool} (line written in ${k.toolLineWritten}) / ${k.delivery}`],
    ['freezes past the lock', f.freezes],
    ['answered exactly once', `${f.answeredOnce} of ${f.messages}`],
    ['lost', f.lost],
    ['duplicate answers (tokens)', f.duplicates],
    ['  of them announced by the may-repeat note', f.notedRepeats.seenTwice],
    ['answers sent again with the note', f.notedRepeats.sent],
    ['repeated side effects', f.repeatedSideEffects],
    ['order violations', f.orderViolations],
    ['done-with-error answers', f.doneWithError],
    ['answered without its line', f.answeredWithoutLine],
    ['notices', f.notices.length],
    ['"send it again" after the line was written', f.sendAgainAfterWrite],
    ['leftover status messages', f.leftoverStatus],
    ['orphan placeholders ("…")', f.orphanPlaceholders],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = rows.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`);
  for (const n of f.notices) lines.push(`  notice in chat ${n.chatId} (${n.tokens.join(' ') || 'no token'}): ${n.text}`);
  for (const [what, tokens] of Object.entries(f.examples)) if (tokens.length > 0) lines.push(`  e.g. ${what}: ${tokens.join(' ')}`);
  const sequence = kills.map((x) => `${x.phase}${x.effect === 'written' ? '*' : ''}`).join(' ');
  if (sequence) lines.push(`  kill sequence (* = line written): ${sequence}`);
  return lines.join('\n');
}
