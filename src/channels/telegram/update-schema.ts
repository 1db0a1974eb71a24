import { z } from 'zod';

/**
 * The fields of a Telegram message this channel reads, checked before it is normalised: an update
 * that does not have them (a message without `chat`, text that is not a string, entities that are
 * not a list, a `text_mention` without its user) is permanently bad — skipped and acknowledged,
 * never answered 500 (Telegram would deliver it again forever). Everything else passes as is.
 */
const user = z.object({
  id: z.number(),
  is_bot: z.boolean().optional(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
  username: z.string().optional(),
});
const entity = z
  .object({ type: z.string(), offset: z.number().int().min(0), length: z.number().int().min(0), user: user.optional() })
  .refine((e) => e.type !== 'text_mention' || e.user !== undefined, 'a text_mention needs its user');
const file = z.object({ file_id: z.string(), file_name: z.string().optional(), file_size: z.number().optional(), mime_type: z.string().optional() });

export const telegramMessageSchema = z.object({
  message_id: z.number().int(),
  date: z.number().optional(),
  chat: z.object({ id: z.number(), type: z.string() }),
  from: user.optional(),
  text: z.string().optional(),
  caption: z.string().optional(),
  entities: z.array(entity).optional(),
  caption_entities: z.array(entity).optional(),
  message_thread_id: z.number().optional(),
  reply_to_message: z.object({ message_id: z.number(), from: user.optional() }).optional(),
  document: file.optional(),
  audio: file.optional(),
  voice: file.optional(),
  video: file.optional(),
  photo: z.array(file).optional(),
});
