import { z } from 'zod';

/**
 * The fields of a Slack event and of an /ask payload this channel reads, checked at the edge: a
 * signed request whose fields have the wrong types (`"text": 42`, a numeric `channel`, `files`
 * that is not a list) is acknowledged and skipped — never a 500 (Slack would send it again), and
 * never queued with a number where an id belongs.
 */
const opt = z.string().optional();
const file = z.object({
  id: z.string(),
  name: opt,
  title: opt,
  mimetype: opt,
  size: z.number().optional(),
  url_private: opt,
  url_private_download: opt,
  mode: opt,
});

export const slackMessageEventSchema = z.object({
  type: z.string(),
  channel: z.string(),
  channel_type: opt,
  user: opt,
  bot_id: opt,
  app_id: opt,
  subtype: opt,
  text: opt,
  ts: z.string(),
  thread_ts: opt,
  files: z.array(file).optional(),
  team: opt,
  user_team: opt,
});

export const slackCommandSchema = z.object({
  command: z.string(),
  text: z.string(),
  channel_id: z.string().min(1),
  user_id: z.string().min(1),
  user_name: opt,
  trigger_id: opt,
  team_id: opt,
  user_team: opt,
});
