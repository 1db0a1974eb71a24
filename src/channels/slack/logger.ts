import { LogLevel, type Logger as SlackLogger } from '@slack/web-api';
import type { Logger } from '../../log.js';

/** The Slack SDKs' logger interface over pino. Their debug output (whole payloads) goes to trace, their info to debug. */
export function slackLogger(log: Logger): SlackLogger {
  let level = LogLevel.INFO;
  const text = (msg: unknown[]) => msg.map((m) => (m instanceof Error ? m.message : typeof m === 'string' ? m : JSON.stringify(m))).join(' ');
  return {
    debug: (...msg: unknown[]) => log.trace(text(msg)),
    info: (...msg: unknown[]) => log.debug(text(msg)),
    warn: (...msg: unknown[]) => log.warn(text(msg)),
    error: (...msg: unknown[]) => log.error(text(msg)),
    setLevel: (l: LogLevel) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
