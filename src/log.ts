import { pino, type Logger } from 'pino';

export type { Logger };

/** Paths redacted from every log line: tokens and keys never reach the logs. */
export const REDACT_PATHS = [
  'token',
  'apiKey',
  'password',
  'authorization',
  '*.token',
  '*.apiKey',
  '*.botToken',
  '*.appToken',
  '*.signingSecret',
  '*.password',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
];

/**
 * One JSON line per event on stderr (stdout belongs to the terminal channel's answers).
 * Message text is logged only at debug level by the callers.
 */
export function createLogger(level: string, name = 'switchboard', destination: pino.DestinationStream = pino.destination(2)): Logger {
  return pino({ name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { pid: process.pid } }, destination);
}
