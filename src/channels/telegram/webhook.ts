import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type Express, type Request, type Response, type NextFunction } from 'express';
import type { Update } from 'grammy/types';
import type { Logger } from '../../log.js';

/** The header Telegram sets on every webhook request to the secret_token given to setWebhook. */
export const SECRET_HEADER = 'x-telegram-bot-api-secret-token';

/**
 * The webhook's secret: TELEGRAM_WEBHOOK_SECRET, or one derived from the bot token so that every
 * gateway behind a load balancer computes the same value without another variable. Telegram
 * allows 1-256 characters of A-Z, a-z, 0-9, _ and -.
 */
export function webhookSecretFor(token: string, configured: string | undefined): string {
  return configured ?? createHash('sha256').update(`switchboard-telegram-webhook:${token}`).digest('base64url');
}

/** The route Telegram posts to: the path of TELEGRAM_WEBHOOK_URL. */
export function webhookPath(url: string): string {
  return new URL(url).pathname || '/';
}

function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Mounts POST <path>: a request without the matching secret header is refused (401) before its
 * body is read; an accepted update is acknowledged (200) as soon as `handle` has put it safely
 * in the queue, never after the run. A failed hand-over answers 500, so Telegram delivers it again.
 */
export function mountWebhook(app: Express, path: string, secret: string, handle: (update: Update) => Promise<void>, log: Logger): void {
  const guard = (req: Request, res: Response, next: NextFunction) => {
    if (sameSecret(req.get(SECRET_HEADER), secret)) return next();
    log.warn({ ip: req.ip, hasHeader: req.get(SECRET_HEADER) !== undefined }, 'telegram webhook request refused: wrong or missing secret token');
    res.status(401).json({ ok: false, error: 'wrong secret token' });
  };
  app.post(path, guard, express.json({ limit: '5mb' }), async (req: Request, res: Response) => {
    const update = req.body as Update | undefined;
    if (!update || typeof update.update_id !== 'number') {
      res.status(400).json({ ok: false, error: 'not a Telegram update' });
      return;
    }
    try {
      await handle(update);
      res.status(200).json({ ok: true });
    } catch (err) {
      log.error({ err, updateId: update.update_id }, 'telegram webhook update not handed over; Telegram will retry');
      res.status(500).json({ ok: false, error: 'not accepted, retry later' });
    }
  });
}
