import { loadConfig, ConfigError } from '../config/load.js';
import { createLogger } from '../log.js';
import { connectRedis } from '../queue/connection.js';
import { ensureRedis, RedisUnavailableError } from './redis-bootstrap.js';
import { PairingStore } from '../access/pairing-store.js';
import { PairingAdmin, type PairingDecision } from '../access/pairing-admin.js';
import { outboundNotify } from '../roles/outbound-notify.js';
import { PAIRING_PLATFORMS } from '../http/pairing-api.js';

const USAGE = `usage: npm run admin -- pairing <command>
  pairing list [platform]               pending codes and approved users
  pairing approve <platform> <code>     let the person in (they are told in their DM)
  pairing deny <platform> <code>        drop the request
  pairing revoke <platform> <userId>    take an approved user's access away
platforms: ${PAIRING_PLATFORMS.join(', ')}`;

class UsageError extends Error {}

/** The operator's command line: the same actions as /admin/api/pairing, against the configured Redis. */
async function main(argv: string[]): Promise<number> {
  const [area, action, platform, arg] = argv;
  if (area !== 'pairing' || !action) throw new UsageError(USAGE);
  if (platform !== undefined && !(PAIRING_PLATFORMS as readonly string[]).includes(platform)) throw new UsageError(`unknown platform "${platform}"\n${USAGE}`);
  if (action !== 'list' && (platform === undefined || arg === undefined)) throw new UsageError(USAGE);

  const config = loadConfig();
  // Warnings only: the command's own output is the answer.
  const log = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  // A private redis-server belongs to the process that started it: nothing here could reach it.
  const handle = await ensureRedis(config.redis.url, config.redis.explicit, false, log);
  const redis = connectRedis(handle.url, 'switchboard-admin', log);
  try {
    const admin = new PairingAdmin(new PairingStore(redis, config.queue.prefix), outboundNotify(config, redis, log), log);
    switch (action) {
      case 'list':
        return print(await admin.list(platform ? [platform] : PAIRING_PLATFORMS));
      case 'approve':
        return decided(await admin.approve(platform!, arg!, 'cli'), arg!);
      case 'deny':
        return decided(await admin.deny(platform!, arg!, 'cli'), arg!);
      case 'revoke': {
        const revoked = await admin.revoke(platform!, arg!, 'cli');
        process.stdout.write(revoked ? `revoked ${platform} user ${arg}\n` : `${platform} user ${arg} was not approved through pairing\n`);
        return revoked ? 0 : 1;
      }
      default:
        throw new UsageError(`unknown pairing command "${action}"\n${USAGE}`);
    }
  } finally {
    redis.disconnect();
  }
}

function print(list: Awaited<ReturnType<PairingAdmin['list']>>): number {
  const out: string[] = [];
  out.push(list.pending.length ? 'pending:' : 'pending: none');
  for (const r of list.pending) {
    const minutes = Math.max(0, Math.round((r.expiresAt - Date.now()) / 60_000));
    out.push(`  ${r.platform}  ${r.code}  user ${r.userId}${r.name ? ` (${r.name})` : ''}  expires in ${minutes} min`);
  }
  out.push(list.approved.length ? 'approved:' : 'approved: none');
  for (const u of list.approved)
    out.push(`  ${u.platform}  user ${u.userId}${u.name ? ` (${u.name})` : ''}  since ${new Date(u.approvedAt).toISOString()} by ${u.by}`);
  process.stdout.write(`${out.join('\n')}\n`);
  return 0;
}

function decided(decision: PairingDecision, code: string): number {
  if (decision.kind === 'unknown_code') {
    process.stdout.write(`no pending code ${code} (codes expire after 1 hour; \`pairing list\` shows the live ones)\n`);
    return 1;
  }
  const { request } = decision;
  const who = `${request.platform} user ${request.userId}${request.name ? ` (${request.name})` : ''}`;
  if (decision.kind === 'denied') process.stdout.write(`denied ${who}\n`);
  else process.stdout.write(`approved ${who}${decision.told ? '; told them' : '; could not tell them (see the warning above): they can write again now'}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError || err instanceof ConfigError || err instanceof RedisUnavailableError) process.stderr.write(`${err.message}\n`);
    else process.stderr.write(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
