import type { IncomingMessage } from 'node:http';

/**
 * A fake's `holdRequests`: waits `ms` before a call takes effect, then says whether its client
 * went away meanwhile (a killed worker), in which case the call never reached the platform and
 * must not take effect. 0 ms: no wait, the client is there.
 */
export async function clientGoneAfter(ms: number, req: IncomingMessage): Promise<boolean> {
  if (ms <= 0) return false;
  await new Promise((r) => setTimeout(r, ms));
  return req.socket.destroyed;
}
