import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../../helpers/processes.js';
import { EVENTS_PATH } from '../../../src/channels/slack/transport.js';
import { ASK_COMMAND } from '../../../src/channels/slack/gateway.js';
import { REACTIONS } from '../../../src/channels/slack/reactions.js';

describe('the Slack setup guide', () => {
  it('shows exactly the manifest file, which asks for the events, scopes and command the channel uses', async () => {
    const manifest = await readFile(join(REPO, 'docs/slack-manifest.yaml'), 'utf8');
    const guide = await readFile(join(REPO, 'docs/slack.md'), 'utf8');
    const block = /```yaml\n([\s\S]*?)```/.exec(guide)?.[1];
    expect(block).toBe(manifest);
    /** The `- item` lines right under `key:`. */
    const list = (key: string) => {
      const lines = manifest.split('\n');
      const start = lines.findIndex((l) => l.trim() === `${key}:`);
      const items: string[] = [];
      for (const line of lines.slice(start + 1)) {
        const m = /^\s+- (\S+)$/.exec(line);
        if (!m) break;
        items.push(m[1]!);
      }
      return items;
    };
    expect(list('bot_events')).toEqual(['app_mention', 'message.im']);
    expect(list('bot')).toEqual([
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
    ]);
    expect(manifest).toContain(`- command: ${ASK_COMMAND}\n`);
    // The /ask command, event subscriptions and interactivity (approval buttons) all post to the one events path.
    expect(manifest.match(new RegExp(`https://switchboard\\.example\\.com${EVENTS_PATH}\\n`, 'g'))).toHaveLength(3);
    expect(manifest).toContain(`  interactivity:\n    is_enabled: true\n    request_url: https://switchboard.example.com${EVENTS_PATH}\n`);
    // Reactions need reactions:write; the names used exist in Slack's standard set.
    expect(Object.values(REACTIONS)).toEqual(['eyes', 'white_check_mark', 'warning']);
  });
});
