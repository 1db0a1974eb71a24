import { describe, expect, it } from 'vitest';
import { cleanText, commandSession, normaliseCommand, normaliseMessage, type CommandView, type MessageView } from '../../../src/channels/discord/inbound.js';
import { interactionOf, messageIdOf, pieceNonce, snowflakeTime, tokenAlive } from '../../../src/channels/discord/ids.js';
import { sessionKeyOf } from '../../../src/channels/session-key.js';

const BOT = { id: '900', roleId: '950' };
const NOW = 1_800_000_000_000;

function view(over: Partial<MessageView> = {}): MessageView {
  return {
    id: '1001',
    channelId: '200',
    guildId: '100',
    author: { id: '300', name: 'Alice', bot: false },
    content: '<@900> summarise the notes',
    system: false,
    webhook: false,
    mentionedUserIds: ['900'],
    mentionedRoleIds: [],
    attachments: [],
    userNames: { '900': 'switchboard' },
    ...over,
  };
}

describe('normaliseMessage: who starts a run', () => {
  it('a guild message that mentions the bot becomes a message of its channel, replying to it', () => {
    const gate = normaliseMessage(view(), BOT, NOW);
    expect(gate).toEqual({
      ok: true,
      message: {
        v: 1,
        id: 'discord-1001',
        platform: 'discord',
        conversation: '200',
        sender: { id: '300', name: 'Alice' },
        where: { kind: 'group', ids: ['200', '100'] },
        text: 'summarise the notes',
        attachments: [],
        eventId: '1001',
        receivedAt: NOW,
        replyTo: '1001',
        meta: { guildId: '100' },
      },
    });
  });

  it('a guild message without a mention is not for the bot', () => {
    expect(normaliseMessage(view({ content: 'just chatting', mentionedUserIds: [] }), BOT, NOW)).toEqual({ ok: false, reason: 'not_addressed' });
  });

  it('@everyone alone does not address the bot', () => {
    expect(normaliseMessage(view({ content: '@everyone lunch?', mentionedUserIds: [] }), BOT, NOW)).toEqual({ ok: false, reason: 'not_addressed' });
  });

  it("a reply to one of the bot's messages addresses it, mention or not", () => {
    const gate = normaliseMessage(view({ content: 'and the second one?', mentionedUserIds: [], repliedToUserId: '900' }), BOT, NOW);
    expect(gate.ok && gate.message.text).toBe('and the second one?');
  });

  it("a mention of the bot's managed role addresses it (some clients insert the role)", () => {
    const gate = normaliseMessage(view({ content: '<@&950> hello', mentionedUserIds: [], mentionedRoleIds: ['950'] }), BOT, NOW);
    expect(gate.ok && gate.message.text).toBe('hello');
  });

  it('a DM always addresses the bot; its session is the DM channel (one per user)', () => {
    const gate = normaliseMessage(view({ guildId: undefined, channelId: '555', content: 'hi there', mentionedUserIds: [] }), BOT, NOW);
    expect(gate.ok && gate.message).toMatchObject({ conversation: '555', text: 'hi there', meta: { dm: '1' } });
    expect(gate.ok && sessionKeyOf(gate.message)).toBe('discord:555');
  });

  it('ignores its own messages, other bots, webhooks and system messages', () => {
    expect(normaliseMessage(view({ author: { id: '900', name: 'me', bot: true } }), BOT, NOW)).toEqual({ ok: false, reason: 'own' });
    expect(normaliseMessage(view({ author: { id: '301', name: 'other', bot: true } }), BOT, NOW)).toEqual({ ok: false, reason: 'bot' });
    expect(normaliseMessage(view({ webhook: true }), BOT, NOW)).toEqual({ ok: false, reason: 'bot' });
    expect(normaliseMessage(view({ system: true }), BOT, NOW)).toEqual({ ok: false, reason: 'system' });
  });

  it('a bare mention with nothing else is empty (mention-only mode also blanks unmentioned replies)', () => {
    expect(normaliseMessage(view({ content: '<@900>' }), BOT, NOW)).toEqual({ ok: false, reason: 'empty' });
    expect(normaliseMessage(view({ content: '', mentionedUserIds: [], repliedToUserId: '900' }), BOT, NOW)).toEqual({ ok: false, reason: 'empty' });
  });

  it('carries attachments with their CDN URL as the ref', () => {
    const gate = normaliseMessage(
      view({
        content: '<@900>',
        attachments: [{ name: 'notes.txt', url: 'https://cdn.discordapp.com/attachments/1/2/notes.txt?ex=1', size: 12, contentType: 'text/plain' }],
      }),
      BOT,
      NOW,
    );
    expect(gate.ok && gate.message.attachments).toEqual([
      { name: 'notes.txt', ref: 'https://cdn.discordapp.com/attachments/1/2/notes.txt?ex=1', size: 12, mime: 'text/plain' },
    ]);
  });

  it("a message in a thread is the thread's session, apart from its channel's", () => {
    const inThread = normaliseMessage(view({ channelId: '777' }), BOT, NOW);
    const inChannel = normaliseMessage(view(), BOT, NOW);
    expect(inThread.ok && sessionKeyOf(inThread.message)).toBe('discord:777');
    expect(inChannel.ok && sessionKeyOf(inChannel.message)).toBe('discord:200');
  });
});

describe('cleanText', () => {
  it('drops the bot mention in both forms and shows other mentions as @name', () => {
    expect(cleanText('<@!900> ask <@301> and <@302>   about   it <@900>', BOT, { '301': 'Bob' })).toBe('ask @Bob and <@302> about it');
  });

  it('keeps line breaks', () => {
    expect(cleanText('<@900> first\nsecond', BOT)).toBe('first\nsecond');
  });
});

describe('slash commands', () => {
  const cmd: CommandView = {
    id: '1576637981740105752',
    token: 'tok',
    applicationId: '900',
    name: 'ask',
    prompt: '  list the files  ',
    channelId: '200',
    guildId: '100',
    user: { id: '300', name: 'Alice' },
  };

  it("/ask is a message of its channel's session, answered through its interaction", () => {
    const m = normaliseCommand(cmd, NOW);
    expect(m).toEqual({
      v: 1,
      id: 'discord-1576637981740105752',
      platform: 'discord',
      conversation: '200',
      sender: { id: '300', name: 'Alice' },
      where: { kind: 'group', ids: ['200', '100'] },
      text: 'list the files',
      attachments: [],
      eventId: '1576637981740105752',
      receivedAt: NOW,
      meta: { interactionToken: 'tok', applicationId: '900', userId: '300', guildId: '100' },
    });
    expect(interactionOf(m)).toEqual({ id: '1576637981740105752', token: 'tok', applicationId: '900', userId: '300' });
  });

  it('joins the same session as mentions in that channel', () => {
    const mention = normaliseMessage(view(), BOT, NOW);
    expect(sessionKeyOf(normaliseCommand(cmd, NOW))).toBe(mention.ok && sessionKeyOf(mention.message));
    expect(sessionKeyOf(commandSession(cmd))).toBe('discord:200');
  });

  it('/reset becomes the text /reset, which the intake queues in order', () => {
    expect(normaliseCommand({ ...cmd, name: 'reset', prompt: undefined } as CommandView, NOW).text).toBe('/reset');
  });
});

describe('ids', () => {
  it('reads the time out of a snowflake', () => {
    // Discord's documented example: 175928847299117063 was made at 2016-04-30 11:18:25.796 UTC.
    expect(new Date(snowflakeTime('175928847299117063')).toISOString()).toBe('2016-04-30T11:18:25.796Z');
  });

  it('an interaction token is usable until shortly before 15 minutes after the interaction', () => {
    const id = ((BigInt(NOW) - 1_420_070_400_000n) << 22n).toString();
    expect(tokenAlive({ id }, NOW + 14 * 60_000)).toBe(true);
    expect(tokenAlive({ id }, NOW + 15 * 60_000)).toBe(false);
  });

  it("a piece's nonce is stable for the same reply piece, different otherwise, and at most 25 characters", () => {
    const a = pieceNonce({ id: messageIdOf('1') }, 'answer', 0);
    expect(a).toBe(pieceNonce({ id: 'discord-1' }, 'answer', 0));
    expect(a.length).toBeLessThanOrEqual(25);
    expect(
      new Set([a, pieceNonce({ id: 'discord-1' }, 'answer', 1), pieceNonce({ id: 'discord-1' }, 'status', 0), pieceNonce({ id: 'discord-2' }, 'answer', 0)])
        .size,
    ).toBe(4);
  });
});
