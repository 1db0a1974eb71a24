import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';

export const ADMIN_COOKIE = 'sb_admin';
/** Failed admin logins allowed per client address per minute. */
export const FAILED_LOGINS_PER_MINUTE = 10;

/** The cookie holds a MAC of the token, never the token itself. */
export function adminCookieValue(token: string): string {
  return createHmac('sha256', token).update('switchboard-admin-session').digest('hex');
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function cookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k !== name) continue;
    // A malformed escape (`%E0%A4%A`) is no cookie, not a server error.
    try {
      return decodeURIComponent(v.join('='));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Bearer token, basic auth (any user name, the token as password), or the login cookie. */
export function presentsToken(req: Request, token: string): boolean {
  const header = req.headers.authorization ?? '';
  if (header.startsWith('Bearer ')) return same(header.slice(7).trim(), token);
  if (header.startsWith('Basic ')) {
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    return same(decoded.slice(decoded.indexOf(':') + 1), token);
  }
  const fromCookie = cookie(req, ADMIN_COOKIE);
  return fromCookie !== undefined && same(fromCookie, adminCookieValue(token));
}

/**
 * Guards the dashboard, the admin API and (unless public) the metrics. Without ADMIN_TOKEN
 * everything is refused; a wrong or missing credential gets 401 (browsers then ask for basic
 * auth); failed attempts are rate-limited per client address.
 */
export function adminGuard(token: string | undefined): RequestHandler[] {
  if (!token) {
    return [
      (_req, res) => {
        res.status(403).type('text/plain').send('The admin surface is off: set ADMIN_TOKEN to enable it.\n');
      },
    ];
  }
  const limiter = rateLimit({
    windowMs: 60_000,
    limit: FAILED_LOGINS_PER_MINUTE,
    skipSuccessfulRequests: true,
    // Only a refused credential is a failed attempt (a 404 or 409 behind the guard is not).
    requestWasSuccessful: (_req, res) => res.statusCode !== 401,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    message: 'Too many failed attempts; wait a minute.\n',
  });
  const check: RequestHandler = (req, res, next) => {
    if (presentsToken(req, token)) return next();
    res
      .status(401)
      .set('WWW-Authenticate', 'Basic realm="Switchboard admin", charset="UTF-8"')
      .type('text/plain')
      .send('Unauthorized: send the ADMIN_TOKEN (basic auth password, bearer token, or log in at /admin/login).\n');
  };
  return [limiter, check];
}
