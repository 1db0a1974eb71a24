import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';

/** C0 controls and DEL: nothing the dashboard sends in a query or a path. */
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * What is wrong with one query value or path segment, for bull-board's API: it must be one plain
 * string (the dashboard never repeats or nests a parameter), free of control characters (bull-board
 * joins an error's translation key and the offending value with NUL and splits them again: a NUL in
 * the value turns its 400 into a 500), and decodable once more (it decodeURIComponent()s the
 * queue name itself and throws on a malformed escape).
 */
function problemOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'is repeated or nested';
  if (CONTROL.test(value)) return 'contains a control character';
  try {
    decodeURIComponent(value);
  } catch {
    return 'has a malformed %-escape';
  }
  return undefined;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** A string (key or value) anywhere in a parsed JSON body that holds a NUL, bull-board's separator. */
function hasNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (depth > 64 || typeof value !== 'object' || value === null) return false;
  return Object.entries(value).some(([k, v]) => k.includes('\u0000') || hasNul(v, depth + 1));
}

function refuse(res: Response, error: string): void {
  res.status(400).json({ ok: false, error });
}

/** bull-board's own limit for the JSON bodies of its API (express.json's default). */
const BODY_LIMIT = '100kb';

/**
 * In front of bull-board's API (/api/* under the dashboard), behind the admin guard: a malformed
 * query parameter, path segment or a NUL in a JSON body is a 400 here instead of a 500 there.
 * The body is parsed here (bull-board's own parser then leaves it as it is).
 */
export function boardApiGuard(): RequestHandler {
  const json = express.json({ limit: BODY_LIMIT });
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.path.startsWith('/api/')) return next();
    for (const segment of req.path.split('/')) {
      const problem = problemOf(segment) ?? (CONTROL.test(safeDecode(segment)) ? 'contains a control character' : undefined);
      if (problem) return refuse(res, `a path segment ${problem}`);
    }
    for (const [key, value] of Object.entries(req.query)) {
      const problem = CONTROL.test(key) ? 'contains a control character' : problemOf(value);
      if (problem) return refuse(res, `query parameter "${key.slice(0, 40).replace(CONTROL, '?')}" ${problem}`);
    }
    json(req, res, (err?: unknown) => {
      if (err) return next(err);
      if (hasNul(req.body)) return refuse(res, 'the body contains a NUL character');
      next();
    });
  };
}
