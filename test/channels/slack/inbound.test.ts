import { describe, expect, it } from 'vitest';
import { askToInbound, attachmentsOf, classifyEvent, parseAsk, toInbound, type SlackMessageEvent } from '../../../src/channels/slack/inbound.js';
import { askKey, isDirect, messageKey, parseMessageKey } from '../../../src/channels/slack/ids.js';
import { mentions, slackToPlain } from '../../../src/channels/slack/text.js';
import { sessionKeyOf, decodeSessionKey } from '../../../src/channels/session-key.js';

const BOT = 'U0BOT';
const NOW = 1_700_000_000_000;

const mention = (over: Partial<SlackMessageEvent> = {}): SlackMessageEvent => ({
  type: 'app_mention',
  channel: 'C0CHAN',
  user: 'U0ADA',
  text: `<@${BOT}> what is in notes.md?`,
  ts: '1700000000.000100',
  ...over,
});

describe('slack text → plain text', () => {
  it('removes the bot mention anywhere, keeps other mentions readable', () => {
    expect(slackToPlain(`<@${BOT}> summarise this`, BOT)).toBe('summarise this');
    expect(slackToPlain(`hey <@${BOT}|switchboard> ping <@U0BOB>`, BOT)).toBe('hey ping @U0BOB');
    expect(slackToPlain('<@U0BOB|bob> and <#C0GEN|general> and <!here> and <!subteam^S1|@devs>', BOT)).toBe('@bob and #general and @here and @devs');
  });

  it('decodes entities once and makes links readable', () => {
    expect(slackToPlain('1 &lt; 2 &amp;&amp; 3 &gt; 2, literally &amp;lt;', BOT)).toBe('1 < 2 && 3 > 2, literally &lt;');
    expect(slackToPlain('see <https://example.com/a?b=1&amp;c=2|the doc> or <https://x.org> or <mailto:a@b.io|a@b.io>', BOT)).toBe(
      'see the doc (https://example.com/a?b=1&c=2) or https://x.org or a@b.io',
    );
  });

  it('keeps the user’s own spacing and lines (code)', () => {
    expect(slackToPlain(`<@${BOT}> run\n\`\`\`\n  if x:\n    y\n\`\`\``, BOT)).toBe('run\n```\n  if x:\n    y\n```');
  });

  it('knows a mention of the bot', () => {
    expect(mentions(`hi <@${BOT}>`, BOT)).toBe(true);
    expect(mentions(`hi <@${BOT}|sb>`, BOT)).toBe(true);
    expect(mentions('hi <@U0BOTX>', BOT)).toBe(false);
    expect(mentions(`hi <@${BOT}>`, undefined)).toBe(false);
  });
});

describe('which events are for the bot', () => {
  it('takes mentions, the message twin of a mention, and DMs', () => {
    expect(classifyEvent(mention(), BOT)).toEqual({ kind: 'mention' });
    expect(classifyEvent(mention({ type: 'message', channel_type: 'channel' }), BOT)).toEqual({ kind: 'mention' });
    expect(classifyEvent({ type: 'message', channel: 'D0DM', channel_type: 'im', user: 'U0ADA', text: 'hi', ts: '1.2' }, BOT)).toEqual({ kind: 'dm' });
  });

  it('ignores own messages, other bots, edits, deletes, joins', () => {
    expect(classifyEvent(mention({ user: BOT }), BOT)).toEqual({ kind: 'ignore', reason: 'own message' });
    expect(classifyEvent(mention({ bot_id: 'B0OTHER' }), BOT)).toEqual({ kind: 'ignore', reason: 'bot message' });
    expect(
      classifyEvent({ type: 'message', subtype: 'bot_message', channel: 'D0DM', channel_type: 'im', text: 'x', ts: '1.2', bot_id: 'B0BOT' }, BOT),
    ).toMatchObject({ kind: 'ignore' });
    for (const subtype of ['message_changed', 'message_deleted', 'channel_join', 'channel_topic']) {
      expect(classifyEvent({ ...mention({ type: 'message' }), subtype }, BOT)).toEqual({ kind: 'ignore', reason: `subtype ${subtype}` });
    }
    expect(classifyEvent({ ...mention(), subtype: 'file_share' }, BOT)).toEqual({ kind: 'mention' });
    expect(classifyEvent({ ...mention(), subtype: 'thread_broadcast', thread_ts: '1.1' }, BOT)).toEqual({ kind: 'mention' });
  });

  it('a channel message without a mention is a thread reply when threaded, else ignored', () => {
    const plain = { type: 'message', channel: 'C0CHAN', channel_type: 'channel', user: 'U0ADA', text: 'and also?', ts: '1700000000.000200' };
    expect(classifyEvent({ ...plain, thread_ts: '1700000000.000100' }, BOT)).toEqual({ kind: 'thread_reply' });
    expect(classifyEvent(plain, BOT)).toEqual({ kind: 'ignore', reason: 'no mention' });
    // The root of a thread is not a reply to it.
    expect(classifyEvent({ ...plain, thread_ts: plain.ts }, BOT)).toEqual({ kind: 'ignore', reason: 'no mention' });
  });
});

describe('normalised messages and session keys', () => {
  it('a top-level mention starts a thread session keyed by its ts; the answer goes under it', () => {
    const m = toInbound(mention(), BOT, NOW)!;
    expect(m).toEqual({
      v: 1,
      id: 'C0CHAN:1700000000.000100',
      platform: 'slack',
      conversation: 'C0CHAN',
      thread: '1700000000.000100',
      sender: { id: 'U0ADA' },
      where: { kind: 'group', ids: ['C0CHAN'] },
      text: 'what is in notes.md?',
      attachments: [],
      eventId: 'C0CHAN:1700000000.000100',
      receivedAt: NOW,
      replyTo: '1700000000.000100',
    });
    expect(sessionKeyOf(m)).toBe('slack:C0CHAN:1700000000.000100');
  });

  it('a mention inside a thread continues that thread’s session', () => {
    const m = toInbound(mention({ ts: '1700000000.000300', thread_ts: '1700000000.000100' }), BOT, NOW)!;
    expect(m.thread).toBe('1700000000.000100');
    expect(m.replyTo).toBe('1700000000.000300');
    expect(sessionKeyOf(m)).toBe('slack:C0CHAN:1700000000.000100');
  });

  it('the app_mention and message twin of one message have the same event id; a retry too', () => {
    const a = toInbound(mention(), BOT, NOW)!;
    const b = toInbound(mention({ type: 'message', channel_type: 'channel' }), BOT, NOW + 5)!;
    expect(b.eventId).toBe(a.eventId);
    expect(b.id).toBe(a.id);
    expect(b.text).toBe(a.text);
  });

  it('a DM is a session per user (its DM channel), and per thread when the user threads', () => {
    const top = toInbound({ type: 'message', channel: 'D0DM', channel_type: 'im', user: 'U0ADA', text: 'hello', ts: '1700000000.000500' }, BOT, NOW)!;
    expect(top.thread).toBeUndefined();
    expect(sessionKeyOf(top)).toBe('slack:D0DM');
    const threaded = toInbound(
      { type: 'message', channel: 'D0DM', channel_type: 'im', user: 'U0ADA', text: 'more', ts: '1700000000.000600', thread_ts: '1700000000.000500' },
      BOT,
      NOW,
    )!;
    expect(sessionKeyOf(threaded)).toBe('slack:D0DM:1700000000.000500');
    expect(decodeSessionKey(sessionKeyOf(threaded))).toEqual({ platform: 'slack', conversation: 'D0DM', thread: '1700000000.000500' });
  });

  it('files become attachments with their private URL; a mention with only files is kept', () => {
    const files = [
      {
        id: 'F1',
        name: 'notes.md',
        mimetype: 'text/markdown',
        size: 42,
        url_private: 'https://files.slack.com/files-pri/T-F1/notes.md',
        url_private_download: 'https://files.slack.com/files-pri/T-F1/download/notes.md',
      },
      { id: 'F2', mode: 'tombstone' },
      { id: 'F3', title: 'untitled', url_private: 'https://files.slack.com/files-pri/T-F3/x' },
    ];
    expect(attachmentsOf(files)).toEqual([
      { name: 'notes.md', ref: 'https://files.slack.com/files-pri/T-F1/download/notes.md', size: 42, mime: 'text/markdown' },
      { name: 'untitled', ref: 'https://files.slack.com/files-pri/T-F3/x' },
    ]);
    const m = toInbound(mention({ text: `<@${BOT}>`, files }), BOT, NOW)!;
    expect(m.text).toBe('(sent files)');
    expect(m.attachments).toHaveLength(2);
    expect(toInbound(mention({ text: `<@${BOT}>` }), BOT, NOW)).toBeNull();
  });
});

describe('/ask', () => {
  it('parses questions, command words and nothing', () => {
    expect(parseAsk('  ')).toEqual({ kind: 'usage' });
    expect(parseAsk('status')).toEqual({ kind: 'command', name: 'status', args: '' });
    expect(parseAsk('/stop')).toEqual({ kind: 'command', name: 'stop', args: '' });
    expect(parseAsk('RESET')).toEqual({ kind: 'command', name: 'reset', args: '' });
    expect(parseAsk('schedules')).toEqual({ kind: 'command', name: 'schedules', args: '' });
    expect(parseAsk('unschedule k3f9qz')).toEqual({ kind: 'command', name: 'unschedule', args: 'k3f9qz' });
    expect(parseAsk('/unschedule')).toEqual({ kind: 'command', name: 'unschedule', args: '' });
    expect(parseAsk('unschedule my meetings tomorrow')).toEqual({ kind: 'question' });
    expect(parseAsk('help me write a poem')).toEqual({ kind: 'question' });
  });

  it('is a message of the conversation it was typed in, answered at the top level, naming who asked', () => {
    const m = askToInbound(
      { command: '/ask', text: 'what is 2+2?', channel_id: 'C0CHAN', user_id: 'U0ADA', user_name: 'ada', trigger_id: '123.456.abc' },
      'what is 2+2?',
      NOW,
    );
    expect(m).toMatchObject({
      id: 'ask:123.456.abc',
      eventId: 'ask:123.456.abc',
      conversation: 'C0CHAN',
      sender: { id: 'U0ADA', name: 'ada' },
      meta: { via: 'ask', user: 'U0ADA' },
    });
    expect(m.thread).toBeUndefined();
    expect(m.replyTo).toBeUndefined();
    expect(sessionKeyOf(m)).toBe('slack:C0CHAN');
  });
});

describe('ids', () => {
  it('message keys round-trip; other ids are not message keys', () => {
    expect(parseMessageKey(messageKey('C0CHAN', '1700000000.000100'))).toEqual({ channel: 'C0CHAN', ts: '1700000000.000100' });
    expect(parseMessageKey(askKey('123.456.abc'))).toBeNull();
    expect(parseMessageKey('C0CHAN:notats')).toBeNull();
  });

  it('tells DMs from channels', () => {
    expect(isDirect('D0DM', 'im')).toBe(true);
    expect(isDirect('C0CHAN', 'channel')).toBe(false);
    expect(isDirect('G0MPIM', 'mpim')).toBe(false);
    expect(isDirect('D0DM')).toBe(true);
    expect(isDirect('C0CHAN')).toBe(false);
  });
});
