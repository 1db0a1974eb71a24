import { describe, expect, it } from 'vitest';
import type { Message } from 'grammy/types';
import { normaliseMessage, type NormaliseOptions } from '../../../src/channels/telegram/inbound.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';

const ME = { id: 500, username: 'SwitchBot' };
const ADA = { id: 42, is_bot: false, first_name: 'Ada', last_name: 'L', username: 'ada' };
const BOB = { id: 43, is_bot: false, first_name: 'Bob' };
const DM = { id: 42, type: 'private' as const, first_name: 'Ada' };
const GROUP = { id: -1001234, type: 'supergroup' as const, title: 'Team' };

let ids = 0;
const opts = (extra: Partial<NormaliseOptions> = {}): NormaliseOptions => ({
  me: ME,
  maxBytes: 20_000_000,
  now: 1_700_000_000_000,
  newId: () => `id-${++ids}`,
  ...extra,
});

function msg(fields: Record<string, unknown>): Message {
  return { message_id: 7, date: 1_700_000_000, chat: DM, from: ADA, ...fields } as unknown as Message;
}

const mention = (text: string, who = '@SwitchBot') => ({ type: 'mention', offset: text.indexOf(who), length: who.length });

describe('telegram inbound: which messages reach the bot', () => {
  it('a DM becomes a normalised message: per-user session, sender, reply target, message identity as eventId', () => {
    const n = normaliseMessage(msg({ text: '  summarise notes.md  ' }), opts());
    expect(n.kind).toBe('message');
    if (n.kind !== 'message') return;
    expect(n.trigger).toBe('dm');
    expect(n.message).toMatchObject({
      v: 1,
      platform: 'telegram',
      conversation: '42',
      sender: { id: '42', name: 'Ada L (@ada)' },
      text: 'summarise notes.md',
      attachments: [],
      eventId: '42:7',
      replyTo: '7',
      receivedAt: 1_700_000_000_000,
      meta: { chatType: 'private' },
    });
    expect(n.message.thread).toBeUndefined();
    expect(sessionKeyOf(n.message)).toBe('telegram:42');
  });

  it('in a group, a message that does not address the bot is ignored', () => {
    const n = normaliseMessage(msg({ chat: GROUP, text: 'lunch anyone?' }), opts());
    expect(n).toEqual({ kind: 'ignore', reason: 'group message not addressed to the bot' });
  });

  it('an @mention (any case) triggers and is cut out of the text', () => {
    const text = 'hey @switchbot, what is in todo.md?';
    const n = normaliseMessage(msg({ chat: GROUP, text, entities: [mention(text, '@switchbot')] }), opts());
    expect(n.kind).toBe('message');
    if (n.kind !== 'message') return;
    expect(n.trigger).toBe('mention');
    expect(n.message.text).toBe('hey what is in todo.md?');
    expect(n.message.conversation).toBe('-1001234');
    expect(sessionKeyOf(n.message)).toBe('telegram:-1001234');
  });

  it('a leading mention leaves clean text; a mention of someone else does not trigger', () => {
    const text = '@SwitchBot: list the files';
    const n = normaliseMessage(msg({ chat: GROUP, text, entities: [mention(text)] }), opts());
    expect(n.kind === 'message' && n.message.text).toBe('list the files');
    const other = '@someone list the files';
    expect(normaliseMessage(msg({ chat: GROUP, text: other, entities: [mention(other, '@someone')] }), opts()).kind).toBe('ignore');
  });

  it('a text_mention of the bot (a user without a username picked it) triggers and is cut', () => {
    const text = 'Switchboard please read a.txt';
    const n = normaliseMessage(
      msg({ chat: GROUP, text, entities: [{ type: 'text_mention', offset: 0, length: 11, user: { id: 500, is_bot: true, first_name: 'Switchboard' } }] }),
      opts(),
    );
    expect(n.kind === 'message' && [n.trigger, n.message.text]).toEqual(['mention', 'please read a.txt']);
  });

  it('a reply to one of the bot’s messages triggers; a reply to someone else does not', () => {
    const toBot = normaliseMessage(
      msg({
        chat: GROUP,
        text: 'and the second one?',
        reply_to_message: { message_id: 3, from: { id: 500, is_bot: true, first_name: 'S' }, chat: GROUP, date: 1 },
      }),
      opts(),
    );
    expect(toBot.kind === 'message' && toBot.trigger).toBe('reply');
    const toBob = normaliseMessage(msg({ chat: GROUP, text: 'agreed', reply_to_message: { message_id: 3, from: BOB, chat: GROUP, date: 1 } }), opts());
    expect(toBob.kind).toBe('ignore');
  });

  it('/ask and /ask@bot trigger with the command cut; /ask@otherbot is ignored', () => {
    const plain = normaliseMessage(msg({ chat: GROUP, text: '/ask what changed?', entities: [{ type: 'bot_command', offset: 0, length: 4 }] }), opts());
    expect(plain.kind === 'message' && [plain.trigger, plain.message.text]).toEqual(['command', 'what changed?']);
    const addressed = normaliseMessage(
      msg({ chat: GROUP, text: '/ask@SwitchBot what changed?', entities: [{ type: 'bot_command', offset: 0, length: 14 }] }),
      opts(),
    );
    expect(addressed.kind === 'message' && addressed.message.text).toBe('what changed?');
    const other = normaliseMessage(
      msg({ chat: GROUP, text: '/ask@OtherBot what changed?', entities: [{ type: 'bot_command', offset: 0, length: 13 }] }),
      opts(),
    );
    expect(other).toEqual({ kind: 'ignore', reason: 'command for another bot' });
  });

  it('our commands in a group pass through with their text for the intake; foreign bare commands are ignored', () => {
    const stop = normaliseMessage(msg({ chat: GROUP, text: '/stop@SwitchBot', entities: [{ type: 'bot_command', offset: 0, length: 15 }] }), opts());
    expect(stop.kind === 'message' && stop.message.text).toBe('/stop@SwitchBot');
    const foreign = normaliseMessage(msg({ chat: GROUP, text: '/roll d20', entities: [{ type: 'bot_command', offset: 0, length: 5 }] }), opts());
    expect(foreign.kind).toBe('ignore');
  });

  it('/start (with or without a deep-link payload) is answered as /help', () => {
    const n = normaliseMessage(msg({ text: '/start ref123', entities: [{ type: 'bot_command', offset: 0, length: 6 }] }), opts());
    expect(n.kind === 'message' && n.message.text).toBe('/help');
  });

  it('an empty /ask or a bare mention gets a hint instead of a run', () => {
    const n = normaliseMessage(msg({ chat: GROUP, text: '/ask', entities: [{ type: 'bot_command', offset: 0, length: 4 }] }), opts());
    expect(n.kind === 'refuse' && [n.reason, n.reply]).toEqual(['empty', 'Write your request with it, for example: /ask what is in notes.md?']);
  });

  it('forum topics are sessions of their own; the General topic and reply threads of plain groups are not', () => {
    const forum = { ...GROUP, is_forum: true };
    const topic = normaliseMessage(
      msg({ chat: forum, text: '/ask hi', entities: [{ type: 'bot_command', offset: 0, length: 4 }], message_thread_id: 99, is_topic_message: true }),
      opts(),
    );
    expect(topic.kind === 'message' && sessionKeyOf(topic.message)).toBe('telegram:-1001234:99');
    const replyThread = normaliseMessage(
      msg({ chat: GROUP, text: '/ask hi', entities: [{ type: 'bot_command', offset: 0, length: 4 }], message_thread_id: 5 }),
      opts(),
    );
    expect(replyThread.kind === 'message' && sessionKeyOf(replyThread.message)).toBe('telegram:-1001234');
  });

  it('in a forum topic, the implicit reply to the topic’s first message does not count as a reply to the bot', () => {
    const forum = { ...GROUP, is_forum: true };
    const root = {
      message_id: 99,
      from: { id: 500, is_bot: true, first_name: 'S' },
      chat: forum,
      date: 1,
      forum_topic_created: { name: 'bot topic', icon_color: 1 },
    };
    const n = normaliseMessage(msg({ chat: forum, text: 'chatting', message_thread_id: 99, is_topic_message: true, reply_to_message: root }), opts());
    expect(n.kind).toBe('ignore');
  });

  it('ignores the bot’s own messages, other bots, automatic forwards and messages without a sender', () => {
    expect(normaliseMessage(msg({ from: { id: 500, is_bot: true, first_name: 'S' }, text: 'x' }), opts())).toEqual({ kind: 'ignore', reason: 'own message' });
    expect(normaliseMessage(msg({ from: { id: 9, is_bot: true, first_name: 'Other' }, text: 'x' }), opts())).toEqual({
      kind: 'ignore',
      reason: 'sent by a bot',
    });
    expect(
      normaliseMessage(msg({ chat: GROUP, from: { id: 777000, is_bot: false, first_name: 'Telegram' }, is_automatic_forward: true, text: 'x' }), opts()).kind,
    ).toBe('ignore');
    expect(normaliseMessage(msg({ from: undefined, text: 'x' }), opts()).kind).toBe('ignore');
  });

  it('says where it was said and the sender’s username, for the access gate', () => {
    const dm = normaliseMessage(msg({ text: 'hi' }), opts());
    expect(dm.kind === 'message' && [dm.message.where, dm.message.sender.handle]).toEqual([{ kind: 'dm' }, 'ada']);
    const text = '@SwitchBot hi';
    const group = normaliseMessage(msg({ chat: GROUP, from: BOB, text, entities: [mention(text)] }), opts());
    expect(group.kind === 'message' && group.message.where).toEqual({ kind: 'group', ids: [String(GROUP.id)] });
  });

  it('documents and the largest photo size become attachments with file ids; a caption is the text', () => {
    const n = normaliseMessage(
      msg({
        caption: 'what is this?',
        document: { file_id: 'DOC1', file_unique_id: 'u1', file_name: 'report.pdf', mime_type: 'application/pdf', file_size: 1234 },
      }),
      opts(),
    );
    expect(n.kind === 'message' && n.message).toMatchObject({
      text: 'what is this?',
      attachments: [{ name: 'report.pdf', ref: 'DOC1', size: 1234, mime: 'application/pdf' }],
    });
    const photo = normaliseMessage(
      msg({
        photo: [
          { file_id: 'S', file_unique_id: 's', width: 90, height: 90, file_size: 10 },
          { file_id: 'L', file_unique_id: 'l', width: 1280, height: 960, file_size: 200_000 },
        ],
      }),
      opts(),
    );
    expect(photo.kind === 'message' && photo.message.attachments).toEqual([{ name: 'photo-7.jpg', ref: 'L', size: 200_000, mime: 'image/jpeg' }]);
  });

  it('a group caption mention triggers through caption_entities', () => {
    const caption = '@SwitchBot summarise';
    const n = normaliseMessage(
      msg({ chat: GROUP, caption, caption_entities: [mention(caption)], document: { file_id: 'D', file_unique_id: 'd', file_name: 'a.txt', file_size: 5 } }),
      opts(),
    );
    expect(n.kind === 'message' && [n.trigger, n.message.text, n.message.attachments.length]).toEqual(['mention', 'summarise', 1]);
  });

  it('a file over the cap is refused politely, naming it and the limit', () => {
    const n = normaliseMessage(
      msg({ caption: 'read this', document: { file_id: 'BIG', file_unique_id: 'b', file_name: 'dump.zip', file_size: 25_000_000 } }),
      opts({ maxBytes: 20_000_000 }),
    );
    expect(n.kind).toBe('refuse');
    if (n.kind !== 'refuse') return;
    expect(n.reason).toBe('too_large');
    expect(n.reply).toBe(
      "Sorry, I can't take dump.zip (25 MB): files over 20 MB are too large for me. Please send a smaller file, or paste the part you need.",
    );
  });

  it('a DM with nothing readable (a sticker) is ignored', () => {
    expect(normaliseMessage(msg({ sticker: { file_id: 'st' } }), opts())).toEqual({ kind: 'ignore', reason: 'nothing to read (no text, document or photo)' });
  });
});
