import type { ButtonInteraction, ChatInputCommandInteraction, Message, User } from 'discord.js';
import type { CommandView, MessageView } from './inbound.js';

/** A press of a button on one of our messages. */
export interface ButtonView {
  /** The interaction id. */
  id: string;
  customId: string;
  /** The message the button is on. */
  messageId: string;
  channelId: string;
  guildId?: string;
  /** Who pressed: `name` is the unique username (what a decided card shows). */
  user: { id: string; name: string };
}

/** The only place discord.js objects are read: what the pure rules in inbound.ts need, as plain data. */

const nameOf = (user: User, displayName?: string | null): string => displayName ?? user.globalName ?? user.username;

export function messageView(message: Message): MessageView {
  return {
    id: message.id,
    channelId: message.channelId,
    ...(message.guildId && { guildId: message.guildId }),
    ...(message.channel.isThread() && message.channel.parentId && { parentId: message.channel.parentId }),
    author: { id: message.author.id, name: nameOf(message.author, message.member?.displayName), bot: message.author.bot },
    content: message.content,
    system: message.system,
    webhook: message.webhookId !== null,
    mentionedUserIds: [...message.mentions.users.keys()],
    mentionedRoleIds: [...message.mentions.roles.keys()],
    ...(message.mentions.repliedUser && { repliedToUserId: message.mentions.repliedUser.id }),
    attachments: [...message.attachments.values()].map((a) => ({
      name: a.name,
      url: a.url,
      size: a.size,
      ...(a.contentType && { contentType: a.contentType }),
    })),
    userNames: Object.fromEntries(message.mentions.users.map((u) => [u.id, nameOf(u)])),
  };
}

export function commandView(interaction: ChatInputCommandInteraction): CommandView {
  const member = interaction.member;
  const displayName = member && 'displayName' in member ? member.displayName : undefined;
  const prompt = interaction.commandName === 'ask' ? interaction.options.getString('prompt') : null;
  const id =
    interaction.commandName === 'unschedule'
      ? interaction.options.getString('id')
      : interaction.commandName === 'forget'
        ? interaction.options.getString('what')
        : null;
  return {
    id: interaction.id,
    token: interaction.token,
    applicationId: interaction.applicationId,
    name: interaction.commandName,
    ...(prompt !== null && { prompt }),
    ...(id !== null && { args: id }),
    channelId: interaction.channelId,
    ...(interaction.guildId && { guildId: interaction.guildId }),
    ...(interaction.channel?.isThread() && interaction.channel.parentId && { parentId: interaction.channel.parentId }),
    user: { id: interaction.user.id, name: nameOf(interaction.user, displayName) },
  };
}

export function buttonView(interaction: ButtonInteraction): ButtonView {
  return {
    id: interaction.id,
    customId: interaction.customId,
    messageId: interaction.message.id,
    channelId: interaction.channelId,
    ...(interaction.guildId && { guildId: interaction.guildId }),
    user: { id: interaction.user.id, name: interaction.user.username },
  };
}
