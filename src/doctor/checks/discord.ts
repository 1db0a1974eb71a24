import type { Config } from '../../config/config.js';
import { API_VERSION, DISCORD_API } from '../../channels/discord/rest.js';
import { request } from '../http.js';
import { fail, ok, skip, type CheckResult } from '../types.js';

/** Application flags of the privileged Message Content intent (enabled; or enabled while unverified and under 100 servers). */
export const GATEWAY_MESSAGE_CONTENT = 1 << 18;
export const GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 19;

export function hasMessageContent(flags: number): boolean {
  return (flags & (GATEWAY_MESSAGE_CONTENT | GATEWAY_MESSAGE_CONTENT_LIMITED)) !== 0;
}

/** The application's id and flags against DISCORD_APPLICATION_ID and DISCORD_MESSAGE_CONTENT. */
export function applicationCheck(app: { id?: string; flags?: number }, discord: { applicationId: string; messageContent: boolean }): CheckResult[] {
  const results: CheckResult[] = [];
  if (app.id !== discord.applicationId) {
    results.push(
      fail(
        'discord application',
        `the token belongs to application ${app.id ?? '?'}, not DISCORD_APPLICATION_ID ${discord.applicationId}`,
        `set DISCORD_APPLICATION_ID=${app.id ?? '<General Information → Application ID>'} (slash commands are registered under it)`,
      ),
    );
  } else {
    results.push(ok('discord application', `id ${app.id} matches DISCORD_APPLICATION_ID`));
  }
  const flags = Number(app.flags ?? 0);
  if (!discord.messageContent) results.push(skip('discord message content', 'DISCORD_MESSAGE_CONTENT=0: mention-only mode, the intent is not needed'));
  else if (hasMessageContent(flags)) results.push(ok('discord message content', 'Message Content Intent enabled'));
  else {
    results.push(
      fail(
        'discord message content',
        'the privileged Message Content Intent is off (the gateway would refuse the login: 4014 Disallowed intents)',
        'Developer Portal → Bot → Privileged Gateway Intents → Message Content Intent, or set DISCORD_MESSAGE_CONTENT=0',
      ),
    );
  }
  return results;
}

/** GET /users/@me (the token) and GET /applications/@me (id, intents). */
export async function checkDiscord(discord: NonNullable<Config['channels']['discord']>, timeoutMs: number): Promise<CheckResult[]> {
  const base = `${(discord.apiUrl ?? DISCORD_API).replace(/\/+$/, '')}/v${API_VERSION}`;
  const headers = { authorization: `Bot ${discord.token}`, accept: 'application/json' };
  const skipped = [skip('discord application', 'the token check failed'), skip('discord message content', 'the token check failed')];
  const me = await request(`${base}/users/@me`, { headers, timeoutMs });
  if ('error' in me) return [fail('discord token', `${base} does not answer (${me.error})`, 'check DISCORD_API_URL and the network'), ...skipped];
  if (me.status === 401)
    return [
      fail('discord token', 'Discord refused the token (401 Unauthorized)', 'set DISCORD_TOKEN to the bot token (Developer Portal → Bot → Reset Token)'),
      ...skipped,
    ];
  if (me.status >= 400) return [fail('discord token', `GET /users/@me answered ${me.status}`, 'check DISCORD_API_URL'), ...skipped];
  const user = ok('discord token', `bot ${me.body?.username ?? '?'} (${me.body?.id ?? '?'})`);
  const app = await request(`${base}/applications/@me`, { headers, timeoutMs });
  if ('error' in app || app.status >= 400) {
    return [
      user,
      fail('discord application', `GET /applications/@me failed (${'error' in app ? app.error : app.status})`, 'check DISCORD_TOKEN and DISCORD_API_URL'),
      skip('discord message content', 'the application could not be read'),
    ];
  }
  return [user, ...applicationCheck(app.body ?? {}, discord)];
}
