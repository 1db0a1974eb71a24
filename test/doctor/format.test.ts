import { describe, expect, it } from 'vitest';
import { formatTable, maskSecret, redact, summary } from '../../src/doctor/format.js';
import { closeNames, editDistance } from '../../src/doctor/checks/model.js';
import { missingScopes, REQUIRED_SLACK_SCOPES, slackTokenShapes } from '../../src/doctor/checks/slack.js';
import { applicationCheck, GATEWAY_MESSAGE_CONTENT, GATEWAY_MESSAGE_CONTENT_LIMITED, hasMessageContent } from '../../src/doctor/checks/discord.js';
import { webhookCheck } from '../../src/doctor/checks/telegram.js';
import { exitCodeOf } from '../../src/doctor/run.js';
import { fail, ok, skip } from '../../src/doctor/types.js';

describe('doctor table', () => {
  const rows = [ok('config', 'every variable valid'), fail('redis', 'does not answer', 'start Redis'), skip('slack', 'SLACK_BOT_TOKEN not set')];

  it('pads columns, shows ✓ ✗ – and the fix of a failure, without colour unless asked', () => {
    const lines = formatTable(rows).split('\n');
    expect(lines).toEqual([
      'check      found                    fix',
      'config  ✓  every variable valid',
      'redis   ✗  does not answer          start Redis',
      'slack   –  SLACK_BOT_TOKEN not set',
    ]);
    expect(formatTable(rows)).not.toContain('\x1b[');
    expect(formatTable(rows, { colour: true })).toContain('\x1b[31m✗\x1b[0m');
  });

  it('leaves out the fix heading when nothing failed, and sums up', () => {
    expect(formatTable([ok('a', 'b')]).split('\n')[0]).toBe('check     found');
    expect(summary(rows)).toBe('3 checks: 1 ok, 1 failed, 1 skipped');
    expect(exitCodeOf(rows)).toBe(1);
    expect(exitCodeOf([rows[0]!, rows[2]!])).toBe(0);
  });

  it('masks secrets to their first 4 characters', () => {
    expect(maskSecret('xoxb-123-456')).toBe('xoxb…');
    expect(redact('token xoxb-123-456 refused; again xoxb-123-456', ['xoxb-123-456'])).toBe('token xoxb… refused; again xoxb…');
    expect(redact('a b', ['ab', ''])).toBe('a b');
  });
});

describe('doctor pure checks', () => {
  it('diffs Slack scopes from x-oauth-scopes', () => {
    expect(missingScopes(REQUIRED_SLACK_SCOPES.join(','))).toEqual([]);
    expect(missingScopes('app_mentions:read, chat:write,commands,channels:history')).toEqual([
      'chat:write.public',
      'files:read',
      'files:write',
      'groups:history',
      'im:history',
      'mpim:history',
      'reactions:write',
    ]);
    expect(missingScopes('')).toEqual([...REQUIRED_SLACK_SCOPES]);
  });

  it('checks Slack token shapes without printing them', () => {
    expect(slackTokenShapes('xoxb-1', 'xapp-1').status).toBe('ok');
    const bad = slackTokenShapes('xoxp-user-token', 'xoxb-not-an-app-token');
    expect(bad.status).toBe('fail');
    expect(bad.found).toContain('SLACK_BOT_TOKEN xoxp… does not start with xoxb-');
    expect(bad.found).toContain('SLACK_APP_TOKEN xoxb… does not start with xapp-');
    expect(bad.found).not.toContain('user-token');
  });

  it('reads the Message Content intent from the application flags', () => {
    expect(GATEWAY_MESSAGE_CONTENT).toBe(262_144);
    expect(hasMessageContent(GATEWAY_MESSAGE_CONTENT)).toBe(true);
    expect(hasMessageContent(GATEWAY_MESSAGE_CONTENT_LIMITED | (1 << 23))).toBe(true);
    expect(hasMessageContent((1 << 12) | (1 << 14) | (1 << 23))).toBe(false);
    const off = applicationCheck({ id: '1', flags: 0 }, { applicationId: '1', messageContent: false });
    expect(off.map((r) => r.status)).toEqual(['ok', 'skip']);
    const wrong = applicationCheck({ id: '2', flags: GATEWAY_MESSAGE_CONTENT }, { applicationId: '1', messageContent: true });
    expect(wrong.map((r) => r.status)).toEqual(['fail', 'ok']);
    expect(wrong[0]!.fix).toContain('DISCORD_APPLICATION_ID=2');
  });

  it('matches the Telegram webhook with the mode we run in', () => {
    expect(webhookCheck({ url: '', pending_update_count: 0 }, undefined).status).toBe('ok');
    const stray = webhookCheck({ url: 'https://old.example/hook/secret-path', pending_update_count: 3, last_error_message: 'Connection refused' }, undefined);
    expect(stray.status).toBe('fail');
    expect(stray.found).toContain('https://old.example');
    expect(stray.found).not.toContain('secret-path');
    expect(stray.found).toContain('3 pending update(s), last error: Connection refused');
    expect(stray.fix).toContain('deleteWebhook or set TELEGRAM_WEBHOOK_URL');
    expect(webhookCheck({ url: 'https://a.example/tg' }, 'https://a.example/tg').status).toBe('ok');
    expect(webhookCheck({ url: '' }, 'https://a.example/tg').status).toBe('ok');
    expect(webhookCheck({ url: 'https://other.example/tg' }, 'https://a.example/tg').status).toBe('fail');
  });

  it('names the served models closest to a wrong one', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(closeNames('gpt-4.1-mni', ['gpt-4.1-mini', 'gpt-4o', 'text-embedding-3-small', 'gpt-4.1'], 2)).toEqual(['gpt-4.1-mini', 'gpt-4.1']);
    expect(closeNames('qwen2.5', ['llama3', 'qwen2.5:7b'], 1)).toEqual(['qwen2.5:7b']);
  });
});
