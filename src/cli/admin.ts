import { loadConfig, ConfigError } from '../config/load.js';
import { createLogger } from '../log.js';
import { connectRedis } from '../queue/connection.js';
import { ensureRedis, RedisUnavailableError } from './redis-bootstrap.js';
import { PairingStore } from '../access/pairing-store.js';
import { PairingAdmin, type PairingDecision } from '../access/pairing-admin.js';
import { outboundNotify } from '../roles/outbound-notify.js';
import { PAIRING_PLATFORMS } from '../http/pairing-api.js';
import { memoryStoreOf } from '../roles/memory-store.js';
import { SessionKeys } from '../queue/keys.js';
import { Identities } from '../memory/identity.js';
import { MemoryAdmin, MemoryAdminError, type MemoryListing } from '../memory/admin.js';

const USAGE = `usage: npm run admin -- <pairing|identity|memory> <command>
  pairing list [platform]               pending codes and approved users
  pairing approve <platform> <code>     let the person in (they are told in their DM)
  pairing deny <platform> <code>        drop the request
  pairing revoke <platform> <userId>    take an approved user's access away
  identity link <a> <b>                 make b the same person as a (b then has a's memory)
  identity unlink <a>                   a is its own person again
  identity show <a>                     which person a is
  memory list <person>                  what is remembered about them, per agent
  memory export <person>                the same as JSON, to stdout
  memory delete <person> [agent]        delete it in every agent (or in one)
platforms: ${PAIRING_PLATFORMS.join(', ')}
identities: platform:userId (telegram:42, slack:U0123ABC); a <person> may be one (its linked person is meant) or channel:<platform>:<id>`;

class UsageError extends Error {}

/** How many arguments each identity and memory command takes (at least, at most). */
const ARITY: Record<string, Record<string, [number, number]>> = {
  identity: { link: [2, 2], unlink: [1, 1], show: [1, 1] },
  memory: { list: [1, 1], export: [1, 1], delete: [1, 2] },
};

/** The operator's command line: the same actions as /admin/api/pairing, /memory and /identities, against the configured Redis. */
async function main(argv: string[]): Promise<number> {
  const [area, action, platform, arg] = argv;
  if (area === 'identity' || area === 'memory') return people(area, action, argv.slice(2));
  if (area !== 'pairing' || !action) throw new UsageError(USAGE);
  if (platform !== undefined && !(PAIRING_PLATFORMS as readonly string[]).includes(platform)) throw new UsageError(`unknown platform "${platform}"\n${USAGE}`);
  if (action !== 'list' && (platform === undefined || arg === undefined)) throw new UsageError(USAGE);

  const { config, log, redis } = await connect();
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

/** The configured Redis, as every command here reaches it. */
async function connect() {
  const config = loadConfig();
  // Warnings only: the command's own output is the answer.
  const log = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  // A private redis-server belongs to the process that started it: nothing here could reach it.
  const handle = await ensureRedis(config.redis.url, config.redis.explicit, false, log);
  const redis = connectRedis(handle.url, 'switchboard-admin', log);
  return { config, log, redis };
}

/** `identity …` and `memory …`: 0 done, 1 nothing there to change, 2 bad input (as pairing). */
async function people(area: 'identity' | 'memory', action: string | undefined, args: string[]): Promise<number> {
  const arity = action === undefined ? undefined : ARITY[area]![action];
  if (!arity) throw new UsageError(action === undefined ? USAGE : `unknown ${area} command "${action}"\n${USAGE}`);
  if (args.length < arity[0] || args.length > arity[1]) throw new UsageError(USAGE);
  const [a, b] = args as [string, string | undefined];
  const { config, redis } = await connect();
  try {
    const keys = new SessionKeys(config.queue.prefix, config.queue.name);
    const admin = new MemoryAdmin(memoryStoreOf(config, redis, keys), new Identities(redis, keys));
    return await run(admin, `${area} ${action}`, a, b);
  } catch (err) {
    throw err instanceof MemoryAdminError ? new UsageError(err.message) : err;
  } finally {
    redis.disconnect();
  }
}

async function run(admin: MemoryAdmin, command: string, a: string, b: string | undefined): Promise<number> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  switch (command) {
    case 'identity link': {
      const linked = await admin.link(a, b);
      say(`${linked.identity} is now person ${linked.person}`);
      if (linked.unused > 0)
        say(
          `note: ${linked.identity} had ${linked.unused} memory entr${linked.unused === 1 ? 'y' : 'ies'} of its own, which no agent reads now (\`memory list ${linked.identity}\` shows them)`,
        );
      return 0;
    }
    case 'identity unlink': {
      const { unlinked } = await admin.unlink(a);
      say(unlinked ? `${a} is its own person again` : `${a} was not linked`);
      return unlinked ? 0 : 1;
    }
    case 'identity show': {
      const who = await admin.whois(a);
      say(who.linked ? `${a} is person ${who.person} (linked)` : `${a} is its own person (not linked)`);
      return 0;
    }
    case 'memory list':
      return listed(await admin.list(a));
    case 'memory export':
      say(JSON.stringify(await admin.export(a), null, 2));
      return 0;
    case 'memory delete': {
      const done = await admin.delete(a, b);
      const who = `${done.person}${done.resolvedFrom ? ` (${done.resolvedFrom})` : ''}`;
      if (done.deleted === 0) say(`no memory of ${who}${b === undefined ? '' : ` in agent "${b}"`}`);
      else say(`deleted ${done.deleted} entr${done.deleted === 1 ? 'y' : 'ies'} of ${who}: ${done.agents.map((x) => `${x.agent} ${x.deleted}`).join(', ')}`);
      return done.deleted > 0 ? 0 : 1;
    }
  }
  throw new UsageError(USAGE);
}

function listed(list: MemoryListing): number {
  const out = [list.resolvedFrom ? `${list.resolvedFrom} is person ${list.person}` : `person ${list.person}`];
  const block = (title: string, rows: MemoryListing['agents']) => {
    for (const m of rows) {
      out.push(`${title}${m.agent} (${m.entries.length}):`);
      for (const e of m.entries)
        out.push(`  ${e.id}  ${e.state === 'pending' ? '[pending] ' : ''}${e.text}  (${e.provenance}, ${new Date(e.createdAt).toISOString()})`);
    }
  };
  if (list.agents.length === 0) out.push('nothing remembered');
  block('agent ', list.agents);
  if (list.beforeLink) block(`${list.resolvedFrom} before the link, agent `, list.beforeLink);
  process.stdout.write(`${out.join('\n')}\n`);
  return 0;
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
