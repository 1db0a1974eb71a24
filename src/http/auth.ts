import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';

export const ADMIN_COOKIE = 'sb_admin';
/** Failed admin logins allowed per client address per minute. */
export const FAILED_LOGINS_PER_MINUTE = 10;
/** How long a login lasts: the cookie's Max-Age, and the expiry its MAC covers. */
export const ADMIN_SESSION_MS = 12 * 3600 * 1000;

const mac = (token: string, expires: number) => createHmac('sha256', token).update(`switchboard-admin-session:${expires}`).digest('hex');

/**
 * The login cookie: `<expiry ms>.<MAC of the token and that expiry>`, never the token itself. A
 * copied cookie stops working at its expiry, and moving the expiry breaks its MAC.
 */
export function adminCookieValue(token: string, now = Date.now()): string {
  const expires = now + ADMIN_SESSION_MS;
  return `${expires}.${mac(token, expires)}`;
}

function validCookie(value: string | undefined, token: string, now = Date.now()): boolean {
  const m = /^(\d{1,16})\.([0-9a-f]{64})$/.exec(value ?? '');
  if (!m) return false;
  const expires = Number(m[1]);
  // A later expiry than a fresh login gets is no cookie this server issued.
  return expires > now && expires <= now + ADMIN_SESSION_MS + 60_000 && same(m[2]!, mac(token, expires));
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

/** The token a request presents: `Authorization: Bearer …`, or basic auth (any user name, the token as password). */
function presented(req: Request): { scheme: 'bearer' | 'basic'; token: string } | undefined {
  const header = req.headers.authorization ?? '';
  if (header.startsWith('Bearer ')) return { scheme: 'bearer', token: header.slice(7).trim() };
  if (!header.startsWith('Basic ')) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  return { scheme: 'basic', token: decoded.slice(decoded.indexOf(':') + 1) };
}

/** GET, HEAD and OPTIONS only read; anything else may change state. */
export const changesState = (req: Request): boolean => !['GET', 'HEAD', 'OPTIONS'].includes(req.method);

/**
 * Failed token attempts per client address (`req.ip`: the socket's address unless TRUST_PROXY
 * names the proxies) in a fixed one-minute window. Only a wrong token counts: good credentials,
 * a missing one or a stale login cookie are no guess at the token.
 */
export class FailedAttempts {
  private readonly byClient = new Map<string, { count: number; until: number }>();

  constructor(
    private readonly limit = FAILED_LOGINS_PER_MINUTE,
    private readonly windowMs = 60_000,
  ) {}

  private key(req: Request): string {
    return ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
  }

  /** Seconds this client must wait before its next token is checked (0: none). */
  waitS(req: Request, now = Date.now()): number {
    const entry = this.byClient.get(this.key(req));
    return entry && entry.until > now && entry.count >= this.limit ? Math.ceil((entry.until - now) / 1000) : 0;
  }

  add(req: Request, now = Date.now()): void {
    const key = this.key(req);
    const entry = this.byClient.get(key);
    if (entry && entry.until > now) return void entry.count++;
    // Forget finished windows before the map grows large.
    if (this.byClient.size >= 10_000) for (const [k, e] of this.byClient) if (e.until <= now) this.byClient.delete(k);
    this.byClient.set(key, { count: 1, until: now + this.windowMs });
  }
}

const attemptsByApp = new WeakMap<object, FailedAttempts>();

/** One count per HTTP app: the admin guard, the login form and /readyz's details share it. */
export function failedAttemptsOf(app: object): FailedAttempts {
  let failures = attemptsByApp.get(app);
  if (!failures) attemptsByApp.set(app, (failures = new FailedAttempts()));
  return failures;
}

export type TokenCheck = 'ok' | 'wrong' | 'locked';

/**
 * Checks one presented token. A client with too many failures is not checked at all until its
 * minute is over: if a right guess still got through, the lock would not slow guessing.
 */
export function checkToken(req: Request, given: string, token: string, failures: FailedAttempts): TokenCheck {
  if (failures.waitS(req) > 0) return 'locked';
  if (same(given, token)) return 'ok';
  failures.add(req);
  return 'wrong';
}

/**
 * The request's admin credential: the login cookie, a bearer token, or basic auth, the last
 * only for reading — browsers send cached basic credentials with any site's form post, so a
 * state change needs the cookie (SameSite=Strict) or a bearer token, which no page can make a
 * browser send.
 */
export function authenticate(req: Request, token: string, failures: FailedAttempts): TokenCheck | 'none' | 'basic-for-change' {
  if (validCookie(cookie(req, ADMIN_COOKIE), token)) return 'ok';
  const given = presented(req);
  if (!given) return 'none';
  if (given.scheme === 'basic' && changesState(req)) return 'basic-for-change';
  return checkToken(req, given.token, token, failures);
}

/** Any accepted credential (GET: basic auth too); a wrong token counts as a failure. */
export function presentsToken(req: Request, token: string, failures: FailedAttempts): boolean {
  return authenticate(req, token, failures) === 'ok';
}

const hostOf = (origin: string): string | undefined => (URL.canParse(origin) ? new URL(origin).host : undefined);

/**
 * Why a state-changing request is refused as cross-site: the browser says so (Sec-Fetch-Site),
 * or its Origin is another host than the one it was sent to. Tools such as curl send neither.
 */
function crossSite(req: Request): string | undefined {
  const site = req.get('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return 'Forbidden: a cross-site request may not change anything here.';
  const origin = req.get('origin');
  if (origin === undefined) return undefined;
  const here = hostOf(`${URL.canParse(origin) ? new URL(origin).protocol : 'http:'}//${req.host ?? ''}`);
  if (hostOf(origin) === undefined || hostOf(origin) !== here)
    return 'Forbidden: the request comes from another site (Origin) and may not change anything here.';
  return undefined;
}

function refuse(res: Response, status: number, line: string): void {
  res.status(status).type('text/plain').send(`${line}\n`);
}

/** Refuses a cross-site state change (403, one line) before anything else looks at it. */
export const sameSiteChanges: RequestHandler = (req, res, next) => {
  const why = changesState(req) ? crossSite(req) : undefined;
  if (why) return refuse(res, 403, why);
  next();
};

/** 429 for a client with too many failed attempts. */
export function tooManyFailures(req: Request, res: Response, failures: FailedAttempts): void {
  res.set('Retry-After', String(failures.waitS(req) || 60));
  refuse(res, 429, 'Too many failed attempts; wait a minute.');
}

/**
 * Guards the dashboard, the admin API and (unless public) the metrics. Without ADMIN_TOKEN
 * everything is refused; cross-site state changes and basic auth for a change get 403; a wrong or
 * missing credential gets 401 (browsers then ask for basic auth); a client with 10 wrong tokens
 * in a minute gets 429.
 */
export function adminGuard(token: string | undefined, failures = new FailedAttempts()): RequestHandler[] {
  if (!token) {
    return [(_req, res) => refuse(res, 403, 'The admin surface is off: set ADMIN_TOKEN to enable it.')];
  }
  const check: RequestHandler = (req, res, next) => {
    switch (authenticate(req, token, failures)) {
      case 'ok':
        return next();
      case 'basic-for-change':
        return refuse(
          res,
          403,
          'Forbidden: basic auth is for viewing only; to change anything send Authorization: Bearer <ADMIN_TOKEN> or log in at /admin/login.',
        );
      case 'locked':
        return tooManyFailures(req, res, failures);
    }
    // A browser asked for basic auth would only send it back to be refused for a change.
    if (!changesState(req)) res.set('WWW-Authenticate', 'Basic realm="Switchboard admin", charset="UTF-8"');
    refuse(res, 401, 'Unauthorized: send the ADMIN_TOKEN (bearer token; basic auth password for viewing; or log in at /admin/login).');
  };
  return [sameSiteChanges, check];
}
