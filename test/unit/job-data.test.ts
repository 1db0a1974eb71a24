import { describe, expect, it } from 'vitest';
import { forDisplay, jobName } from '../../src/queue/job-data.js';
import type { InboundMessage } from '../../src/channels/types.js';

function message(extra: Partial<InboundMessage>): InboundMessage {
  return {
    v: 1,
    id: 'm',
    platform: 'terminal',
    conversation: 'alice',
    sender: { id: 'alice' },
    text: 'hello',
    attachments: [],
    eventId: 'e',
    receivedAt: 0,
    ...extra,
  };
}

describe('jobName', () => {
  it('names the platform, the conversation and the text', () => {
    expect(jobName(message({ text: 'hello there' }))).toBe('terminal alice: hello there');
    expect(jobName(message({ platform: 'telegram', conversation: '-1001234567890', text: 'hi' }))).toBe('telegram -1001234567890: hi');
  });

  it('names the thread after the conversation', () => {
    expect(jobName(message({ platform: 'slack', conversation: 'C0123', thread: '1712345678.000100', text: 'summarise this' }))).toBe(
      'slack C0123/1712345678.000100: summarise this',
    );
  });

  it('keeps the first 8 words and marks the cut with …', () => {
    expect(jobName(message({ text: 'one two three four five six seven eight nine ten' }))).toBe('terminal alice: one two three four five six seven eight…');
  });

  it('exactly 8 words are not cut', () => {
    expect(jobName(message({ text: 'one two three four five six seven eight' }))).toBe('terminal alice: one two three four five six seven eight');
  });

  it('collapses whitespace and newlines between the words', () => {
    expect(jobName(message({ text: '  first\n\nsecond\t third   ' }))).toBe('terminal alice: first second third');
  });

  it('a /reset is named by its command, not its text', () => {
    expect(jobName(message({ text: '/reset and more words here', command: 'reset' }))).toBe('terminal alice: /reset');
    expect(jobName(message({ platform: 'discord', conversation: '123', thread: '456', text: '', command: 'reset' }))).toBe('discord 123/456: /reset');
  });
});

describe('forDisplay', () => {
  it('blanks credentials in meta and keeps everything else', () => {
    const m = message({ meta: { interactionToken: 'aW50ZXJhY3Rpb24', applicationId: 'app-1', userId: 'u-1' } });
    expect(forDisplay(m)).toEqual({ ...m, meta: { interactionToken: '[redacted]', applicationId: 'app-1', userId: 'u-1' } });
    expect(m.meta!.interactionToken).toBe('aW50ZXJhY3Rpb24');
    const plain = message({});
    expect(forDisplay(plain)).toBe(plain);
  });
});
