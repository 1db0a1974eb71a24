import type { Config } from '../../config/config.js';
import { apiBase } from '../../channels/slack/api.js';
import { maskSecret } from '../format.js';
import { request } from '../http.js';
import { fail, ok, skip, type CheckResult } from '../types.js';

/** The bot scopes the README (and docs/slack-manifest.yaml) ask for. */
export const REQUIRED_SLACK_SCOPES = [
  'app_mentions:read',
  'channels:history',
  'chat:write',
  'chat:write.public',
  'commands',
  'files:read',
  'files:write',
  'groups:history',
  'im:history',
  'mpim:history',
  'reactions:write',
] as const;

/** The required scopes missing from Slack's `x-oauth-scopes` header (a comma-separated list). */
export function missingScopes(header: string, required: readonly string[] = REQUIRED_SLACK_SCOPES): string[] {
  const granted = new Set(
    header
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  return required.filter((s) => !granted.has(s));
}

/** Token shapes: a bot token is xoxb-…, a Socket Mode app-level token xapp-…. */
export function slackTokenShapes(botToken: string, appToken: string | undefined): CheckResult {
  const name = 'slack tokens';
  const problems: string[] = [];
  if (!botToken.startsWith('xoxb-')) problems.push(`SLACK_BOT_TOKEN ${maskSecret(botToken)} does not start with xoxb-`);
  if (appToken !== undefined && !appToken.startsWith('xapp-')) problems.push(`SLACK_APP_TOKEN ${maskSecret(appToken)} does not start with xapp-`);
  if (problems.length > 0) {
    return fail(
      name,
      problems.join('; '),
      'SLACK_BOT_TOKEN is the Bot User OAuth Token (Install App, xoxb-…); SLACK_APP_TOKEN an app-level token with connections:write (Basic Information, xapp-…)',
    );
  }
  return ok(name, `bot token xoxb-…${appToken ? ', Socket Mode app token xapp-…' : ' (HTTP events: no SLACK_APP_TOKEN)'}`);
}

const CREDENTIAL_CODES = new Set(['invalid_auth', 'not_authed', 'token_revoked', 'token_expired', 'account_inactive']);

/** auth.test, then the granted scopes from its x-oauth-scopes header. */
export async function checkSlack(slack: NonNullable<Config['channels']['slack']>, timeoutMs: number): Promise<CheckResult[]> {
  const shapes = slackTokenShapes(slack.botToken, slack.appToken);
  const base = apiBase(slack.apiUrl);
  const answer = await request(`${base}auth.test`, {
    method: 'POST',
    headers: { authorization: `Bearer ${slack.botToken}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: '',
    timeoutMs,
  });
  if ('error' in answer)
    return [
      shapes,
      fail('slack auth.test', `${base} does not answer (${answer.error})`, 'check SLACK_API_URL and the network'),
      skip('slack scopes', 'auth.test failed'),
    ];
  const body = answer.body;
  if (!body || body.ok !== true) {
    const code = typeof body?.error === 'string' ? body.error : `HTTP ${answer.status}`;
    const fix = CREDENTIAL_CODES.has(code)
      ? 'set SLACK_BOT_TOKEN to the Bot User OAuth Token of the installed app (Install App; reinstall after changing scopes)'
      : 'see the Slack error code in the Web API docs';
    return [shapes, fail('slack auth.test', `Slack refused the bot token: ${code}`, fix), skip('slack scopes', 'auth.test failed')];
  }
  const who = ok('slack auth.test', `bot ${body.user ?? '?'} (${body.user_id ?? '?'}) in ${body.team ?? '?'} (${body.team_id ?? '?'})`);
  const header = answer.headers.get('x-oauth-scopes');
  if (header === null) return [shapes, who, skip('slack scopes', 'Slack sent no x-oauth-scopes header; compare the app’s scopes with the README by hand')];
  const missing = missingScopes(header);
  if (missing.length > 0) {
    return [
      shapes,
      who,
      fail(
        'slack scopes',
        `missing ${missing.join(', ')}`,
        'add them under OAuth & Permissions → Bot Token Scopes (or create the app from docs/slack-manifest.yaml), then reinstall the app',
      ),
    ];
  }
  return [shapes, who, ok('slack scopes', `all ${REQUIRED_SLACK_SCOPES.length} required scopes granted`)];
}
