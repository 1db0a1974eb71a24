import type { Config } from '../../config/config.js';
import { originOf, request } from '../http.js';
import { fail, ok, skip, type CheckResult } from '../types.js';

export const TELEGRAM_API_ROOT = 'https://api.telegram.org';

export interface WebhookInfo {
  url?: string;
  pending_update_count?: number;
  last_error_message?: string;
}

/** Whether Telegram's webhook fits the mode we run in (TELEGRAM_WEBHOOK_URL set: webhook; unset: long polling). */
export function webhookCheck(info: WebhookInfo, configured: string | undefined): CheckResult {
  const name = 'telegram webhook';
  const url = info.url ?? '';
  const extras = [`${info.pending_update_count ?? 0} pending update(s)`, ...(info.last_error_message ? [`last error: ${info.last_error_message}`] : [])].join(
    ', ',
  );
  if (configured === undefined) {
    if (url !== '') {
      return fail(
        name,
        `a webhook is set (${originOf(url)}) while we poll; ${extras}`,
        'deleteWebhook or set TELEGRAM_WEBHOOK_URL (if another deployment uses that webhook, polling here would take the bot from it)',
      );
    }
    return ok(name, `none set: long polling; ${extras}`);
  }
  if (url === '') return ok(name, `not set yet (the gateway calls setWebhook at start); ${extras}`);
  if (url !== configured) {
    return fail(
      name,
      `Telegram posts to ${originOf(url)}…, not TELEGRAM_WEBHOOK_URL; ${extras}`,
      'another deployment owns the webhook: stop it, or unset TELEGRAM_WEBHOOK_URL there; the gateway sets its own URL at start',
    );
  }
  return ok(name, `set to TELEGRAM_WEBHOOK_URL; ${extras}`);
}

/** getMe (the token, privacy mode) and getWebhookInfo. */
export async function checkTelegram(tg: NonNullable<Config['channels']['telegram']>, timeoutMs: number): Promise<CheckResult[]> {
  const base = `${(tg.apiRoot ?? TELEGRAM_API_ROOT).replace(/\/+$/, '')}/bot${tg.token}`;
  const shownRoot = originOf(tg.apiRoot ?? TELEGRAM_API_ROOT);
  const me = await request(`${base}/getMe`, { timeoutMs });
  if ('error' in me)
    return [
      fail('telegram getMe', `${shownRoot} does not answer (${me.error})`, 'check TELEGRAM_API_ROOT and the network'),
      skip('telegram webhook', 'getMe failed'),
      skip('telegram privacy', 'getMe failed'),
    ];
  if (me.status === 401 || me.status === 404 || me.body?.ok !== true) {
    const why = me.body?.description ?? `HTTP ${me.status}`;
    return [
      fail(
        'telegram getMe',
        `Telegram refused the token (${me.status}: ${why})`,
        'set TELEGRAM_BOT_TOKEN to the token @BotFather gave (/token to see it again)',
      ),
      skip('telegram webhook', 'getMe failed'),
      skip('telegram privacy', 'getMe failed'),
    ];
  }
  const bot = me.body.result ?? {};
  const results: CheckResult[] = [ok('telegram getMe', `@${bot.username ?? '?'} (${bot.id ?? '?'})`)];
  const hook = await request(`${base}/getWebhookInfo`, { timeoutMs });
  if ('error' in hook || hook.body?.ok !== true)
    results.push(
      fail(
        'telegram webhook',
        `getWebhookInfo failed (${'error' in hook ? hook.error : (hook.body?.description ?? hook.status)})`,
        'try again; check TELEGRAM_API_ROOT',
      ),
    );
  else results.push(webhookCheck(hook.body.result ?? {}, tg.webhookUrl));
  results.push(
    bot.can_read_all_group_messages === true
      ? ok(
          'telegram privacy',
          'privacy mode off: the bot receives every group message (it answers mentions only); @BotFather /setprivacy → Enable is recommended',
        )
      : ok('telegram privacy', 'privacy mode on: in groups the bot sees commands, mentions and replies (what it answers)'),
  );
  return results;
}
