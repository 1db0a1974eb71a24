import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Logger } from '../log.js';
import { MemoryAdminError, type MemoryAdmin, type MemoryDeleted } from '../memory/admin.js';

/** An id fit for a file name (`telegram:42` → `telegram_42`). */
export function fileSafe(id: string): string {
  return id.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 100);
}

/** What a delete that found nothing says. */
export function nothingDeleted(d: MemoryDeleted, agent: string | undefined): string {
  return `no memory of ${d.person}${agent === undefined ? '' : ` in agent "${agent}"`}`;
}

/** Runs a handler; the operator's bad input (MemoryAdminError) is a 400 with its message. */
function handled(fn: (req: Request, res: Response) => Promise<void>): RequestHandler {
  return async (req, res) => {
    try {
      await fn(req, res);
    } catch (err) {
      if (!(err instanceof MemoryAdminError)) throw err;
      res.status(400).json({ error: err.message });
    }
  };
}

/** `?agent=`: absent, or one name (a repeated one is bad input). */
export function agentParam(value: unknown): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new MemoryAdminError('give ?agent= at most once');
  return value;
}

/**
 * /admin/api/memory: a person's memory in every agent (list, export as a JSON attachment,
 * delete). `:person` is a person id, an identity (resolved through its link) or a channel,
 * URL-encoded (`telegram%3A42`). Mounted behind the admin guard; `writable` refuses changes in
 * read-only mode.
 */
export function memoryRouter(admin: MemoryAdmin, writable: RequestHandler, log: Logger): Router {
  const router = express.Router();
  router.get(
    '/:person',
    handled(async (req, res) => void res.json(await admin.list(String(req.params.person)))),
  );
  router.get(
    '/:person/export',
    handled(async (req, res) => {
      const exported = await admin.export(String(req.params.person));
      log.info({ person: exported.person }, 'operator exported memory');
      res.attachment(`memory-${fileSafe(exported.person)}.json`).send(`${JSON.stringify(exported, null, 2)}\n`);
    }),
  );
  router.delete(
    '/:person',
    writable,
    handled(async (req, res) => {
      const agent = agentParam(req.query.agent);
      const deleted = await admin.delete(String(req.params.person), agent);
      log.info({ person: deleted.person, agent, deleted: deleted.deleted }, 'operator deleted memory');
      res.status(deleted.deleted > 0 ? 200 : 404).json({ ...deleted, ...(deleted.deleted === 0 && { error: nothingDeleted(deleted, agent) }) });
    }),
  );
  return router;
}

/** /admin/api/identities: which person an identity is; link two identities into one person; undo a link. */
export function identitiesRouter(admin: MemoryAdmin, writable: RequestHandler, log: Logger): Router {
  const router = express.Router();
  router.post(
    '/link',
    writable,
    handled(async (req, res) => {
      const body = (req.body ?? {}) as { a?: unknown; b?: unknown };
      const linked = await admin.link(body.a, body.b);
      log.info({ person: linked.person, identity: linked.identity }, 'operator linked an identity');
      res.json(linked);
    }),
  );
  router.get(
    '/:identity',
    handled(async (req, res) => void res.json(await admin.whois(String(req.params.identity)))),
  );
  router.delete(
    '/:identity',
    writable,
    handled(async (req, res) => {
      const done = await admin.unlink(String(req.params.identity));
      log.info(done, 'operator unlinked an identity');
      res.status(done.unlinked ? 200 : 404).json({ ...done, ...(!done.unlinked && { error: 'this identity was not linked' }) });
    }),
  );
  return router;
}
