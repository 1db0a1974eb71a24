import express, { type RequestHandler, type Router } from 'express';
import type { Logger } from '../log.js';
import type { ScheduleBook, ScheduleView } from '../schedules/schedule-book.js';

/** A schedule as the admin API shows it (its definition, state, counters and next firing, ISO times beside ms). */
function shown(s: ScheduleView) {
  return { ...s, ...(s.next !== undefined && { nextAt: new Date(s.next).toISOString() }) };
}

/**
 * /admin/api/schedules: every conversation's schedules; pause, resume or delete one. Mounted
 * behind the admin guard; `writable` refuses changes in read-only mode.
 */
export function schedulesRouter(book: ScheduleBook, writable: RequestHandler, log: Logger): Router {
  const router = express.Router();
  router.get('/', async (_req, res) => res.json({ schedules: (await book.all()).map(shown) }));
  router.get('/:id', async (req, res) => {
    const s = await book.get(String(req.params.id));
    if (!s) return void res.status(404).json({ error: 'no such schedule' });
    res.json(shown(s));
  });
  router.post('/:id/pause', writable, async (req, res) => {
    const s = await book.pause(String(req.params.id), 'operator');
    if (!s) return void res.status(404).json({ error: 'no such schedule' });
    log.info({ scheduleId: s.id, session: s.session }, 'operator paused a schedule');
    res.json(shown(s));
  });
  router.post('/:id/resume', writable, async (req, res) => {
    const s = await book.resume(String(req.params.id));
    if (!s) return void res.status(404).json({ error: 'no such schedule' });
    log.info({ scheduleId: s.id, session: s.session }, 'operator resumed a schedule');
    res.json(shown(s));
  });
  router.delete('/:id', writable, async (req, res) => {
    const s = await book.get(String(req.params.id));
    if (!s) return void res.status(404).json({ error: 'no such schedule' });
    await book.remove(s);
    log.info({ scheduleId: s.id, session: s.session }, 'operator deleted a schedule');
    res.json({ deleted: true, id: s.id });
  });
  return router;
}
