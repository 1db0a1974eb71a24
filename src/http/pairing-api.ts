import express, { type RequestHandler, type Router } from 'express';
import type { PairingAdmin, PairingDecision } from '../access/pairing-admin.js';

/** The platforms with DMs (the terminal chat has no pairing). */
export const PAIRING_PLATFORMS = ['telegram', 'slack', 'discord'] as const;

const isPairingPlatform = (p: string): boolean => (PAIRING_PLATFORMS as readonly string[]).includes(p);

/**
 * /admin/api/pairing: list requests and approved users; approve or deny a code; revoke a user.
 * Mounted behind the admin guard; `writable` refuses changes in read-only mode.
 */
export function pairingRouter(pairing: PairingAdmin, writable: RequestHandler): Router {
  const router = express.Router();
  const platformOf: RequestHandler = (req, res, next) => {
    const platform = String(req.params.platform);
    if (!isPairingPlatform(platform)) return void res.status(400).json({ error: `unknown platform "${platform}" (one of ${PAIRING_PLATFORMS.join(', ')})` });
    next();
  };
  router.get('/', async (_req, res) => res.json(await pairing.list(PAIRING_PLATFORMS)));
  router.get('/:platform', platformOf, async (req, res) => res.json(await pairing.list([String(req.params.platform)])));
  router.post('/:platform/:code/approve', writable, platformOf, async (req, res) => {
    send(res, await pairing.approve(String(req.params.platform), String(req.params.code), 'api'));
  });
  router.post('/:platform/:code/deny', writable, platformOf, async (req, res) => {
    send(res, await pairing.deny(String(req.params.platform), String(req.params.code), 'api'));
  });
  router.post('/:platform/users/:userId/revoke', writable, platformOf, async (req, res) => {
    const revoked = await pairing.revoke(String(req.params.platform), String(req.params.userId), 'api');
    res.status(revoked ? 200 : 404).json({ revoked, ...(!revoked && { error: 'this user was not approved through pairing' }) });
  });
  return router;
}

function send(res: express.Response, decision: PairingDecision): void {
  if (decision.kind === 'unknown_code') return void res.status(404).json({ error: 'no such pending code (codes expire after 1 hour)' });
  const { request, told } = decision;
  res.json({ [decision.kind]: true, platform: request.platform, userId: request.userId, ...(request.name !== undefined && { name: request.name }), told });
}
