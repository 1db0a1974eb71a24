import { describe, expect, it } from 'vitest';
import { MAX_CLAIMS, selectTurn, type ClaimedMessage } from '../../src/session/turn.js';
import { toUserMessage } from '../../src/run/input/user-message.js';
import type { Attachment, InboundMessage } from '../../src/channels/types.js';

function message(id: string, text: string, extra: Partial<InboundMessage> = {}): InboundMessage {
  return {
    v: 1,
    id,
    platform: 'terminal',
    conversation: 'alice',
    sender: { id: 'alice' },
    text,
    attachments: [],
    eventId: `ev-${id}`,
    receivedAt: 1_700_000_000_000,
    ...extra,
  };
}

function claimed(id: string, opts: { claims?: number; reset?: boolean; scheduled?: boolean } = {}): ClaimedMessage {
  const m = message(id, `text ${id}`, {
    ...(opts.reset && { command: 'reset' as const }),
    ...(opts.scheduled && { scheduled: { id: 'k3f9qz', name: 'digest', firedAt: Date.parse('2026-12-07T08:00:00Z'), tz: 'Europe/Berlin' } }),
  });
  return { message: m, raw: JSON.stringify(m), claims: opts.claims ?? 1 };
}

const ids = (turn: { taken: ClaimedMessage[] }) => turn.taken.map((c) => c.message.id);

describe('selectTurn', () => {
  it('MAX_CLAIMS is 3', () => {
    expect(MAX_CLAIMS).toBe(3);
  });

  it('a scheduled message is a turn of its own: not folded with a person’s messages before or after it', () => {
    expect(ids(selectTurn([claimed('s', { scheduled: true }), claimed('a'), claimed('b')]))).toEqual(['s']);
    expect(ids(selectTurn([claimed('a'), claimed('b'), claimed('s', { scheduled: true }), claimed('c')]))).toEqual(['a', 'b']);
    expect(ids(selectTurn([claimed('s', { scheduled: true }), claimed('t', { scheduled: true })]))).toEqual(['s']);
  });

  it('the model reads a scheduled message as one: which schedule, which firing in its zone, then the prompt', () => {
    const m = claimed('s', { scheduled: true }).message;
    expect(toUserMessage(m).content).toBe(
      '[Scheduled task "digest" (k3f9qz), firing of Mon 7 Dec 2026, 09:00 Europe/Berlin. Nobody is waiting in the chat: your answer is posted to the conversation. A scheduled run cannot create schedules or wait for approvals.]\n\ntext s',
    );
  });

  it('a single message is an agent turn of its own', () => {
    const turn = selectTurn([claimed('a')]);
    expect(turn.kind).toBe('agent');
    expect(ids(turn)).toEqual(['a']);
  });

  it('folds consecutive messages into one turn, in arrival order', () => {
    const turn = selectTurn([claimed('a'), claimed('b'), claimed('c', { claims: 2 })]);
    expect(turn.kind).toBe('agent');
    expect(ids(turn)).toEqual(['a', 'b', 'c']);
    // The claimed entries are passed through untouched (raw is what the commit removes).
    expect(turn.taken[2]!.raw).toBe(JSON.stringify(turn.taken[2]!.message));
    expect(turn.taken[2]!.claims).toBe(2);
  });

  it('a message at exactly MAX_CLAIMS is still folded', () => {
    const turn = selectTurn([claimed('a', { claims: MAX_CLAIMS }), claimed('b', { claims: MAX_CLAIMS })]);
    expect(turn.kind).toBe('agent');
    expect(ids(turn)).toEqual(['a', 'b']);
  });

  it('a /reset at the head is a turn of its own', () => {
    const turn = selectTurn([claimed('r', { reset: true }), claimed('b'), claimed('c')]);
    expect(turn.kind).toBe('reset');
    expect(ids(turn)).toEqual(['r']);
  });

  it('a /reset stops the fold: the messages before it are one turn, it is not taken', () => {
    const turn = selectTurn([claimed('a'), claimed('b'), claimed('r', { reset: true }), claimed('c')]);
    expect(turn.kind).toBe('agent');
    expect(ids(turn)).toEqual(['a', 'b']);
  });

  it('a head that started more than MAX_CLAIMS runs is a crashed turn of its own', () => {
    const turn = selectTurn([claimed('a', { claims: MAX_CLAIMS + 1 }), claimed('b'), claimed('c')]);
    expect(turn.kind).toBe('crashed');
    expect(ids(turn)).toEqual(['a']);
  });

  it('a crashed head wins over a /reset head', () => {
    const turn = selectTurn([claimed('r', { reset: true, claims: MAX_CLAIMS + 1 }), claimed('b')]);
    expect(turn.kind).toBe('crashed');
    expect(ids(turn)).toEqual(['r']);
  });

  it('a later message over MAX_CLAIMS stops the fold', () => {
    const turn = selectTurn([claimed('a'), claimed('b', { claims: 2 }), claimed('x', { claims: MAX_CLAIMS + 1 }), claimed('c')]);
    expect(turn.kind).toBe('agent');
    expect(ids(turn)).toEqual(['a', 'b']);
  });

  it('needs at least one message', () => {
    expect(() => selectTurn([])).toThrow('selectTurn needs at least one message');
  });
});

describe('toUserMessage', () => {
  it('is the text alone without attachments', () => {
    expect(toUserMessage(message('a', 'hello there'))).toEqual({ role: 'user', content: 'hello there' });
  });

  /** The text, the header line, and the listed files of a user message with attachments. */
  function parts(m: InboundMessage): { text: string; header: string; files: string[] } {
    const content = toUserMessage(m).content;
    expect(typeof content).toBe('string');
    const cut = (content as string).lastIndexOf('\n\n[');
    expect(cut).toBeGreaterThanOrEqual(0);
    const [header, ...files] = (content as string).slice(cut + 2).split('\n');
    return { text: (content as string).slice(0, cut), header: header!, files };
  }

  it('lists attachments with human sizes, and without a size when unknown', () => {
    const attachments: Attachment[] = [
      { name: 'notes.txt', ref: 'f1', size: 512 },
      { name: 'zero.bin', ref: 'f0', size: 0 },
      { name: 'edge.bin', ref: 'f2', size: 1023 },
      { name: 'one-k.bin', ref: 'f3', size: 1024 },
      { name: 'photo.jpg', ref: 'f4', size: 1536 },
      { name: 'video.mp4', ref: 'f5', size: 5 * 1024 * 1024 + 512 * 1024 },
      { name: 'unknown.dat', ref: 'f6' },
    ];
    const p = parts(message('a', 'see the files', { attachments }));
    expect(p.text).toBe('see the files');
    expect(p.header).toMatch(/^\[Attached files.*\]$/);
    expect(p.files).toEqual([
      '- notes.txt (512 B)',
      '- zero.bin (0 B)',
      '- edge.bin (1023 B)',
      '- one-k.bin (1 KB)',
      '- photo.jpg (1.5 KB)',
      '- video.mp4 (5.5 MB)',
      '- unknown.dat',
    ]);
  });

  it('lists attachments even when the text is empty', () => {
    const p = parts(message('a', '', { attachments: [{ name: 'report.pdf', ref: 'f', size: 2048 }] }));
    expect(p.text).toBe('');
    expect(p.files).toEqual(['- report.pdf (2 KB)']);
  });
});
