import { userInfo } from 'node:os';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from '../config/load.js';
import { createLogger } from '../log.js';
import { ensureRedis, RedisUnavailableError } from './redis-bootstrap.js';
import { connectRedis } from '../queue/connection.js';
import { SessionKeys } from '../queue/keys.js';
import { createRunQueue } from '../queue/run-queue.js';
import { Producer } from '../queue/producer.js';
import { SessionControl } from '../session/control.js';
import { TerminalClient, type TerminalOutput } from '../channels/terminal/client.js';
import { createFiringQueue, ScheduleBook } from '../schedules/schedule-book.js';
import { Intake } from '../intake/intake.js';
import { AgentCommand } from '../intake/agent-command.js';
import { AgentRoster } from '../profiles/roster.js';
import { agentFacts } from '../roles/agent-facts.js';
import { MemoryCommand } from '../intake/memory-command.js';
import { Identities } from '../memory/identity.js';
import { memoryStoreOf } from '../roles/memory-store.js';
import { startWorkerRole, type Role } from '../roles/worker.js';
import { ApprovalDesk } from '../approvals/desk.js';
import { countWorkers } from '../queue/worker-heartbeat.js';
import { ListeningWatch, UNTAKEN_AFTER_MS } from './listening.js';

const USAGE = `usage: npm run chat [-- [--session NAME] [--no-worker] [--yes] ["message"]]
  with a message: one-shot. Progress on stderr, the answer on stdout; exit 0 when the run completed, 1 when not.
  without: an interactive chat (/help, /status, /stop, /reset; Ctrl-C stops a run, Ctrl-D quits).
  --session NAME  continue a named conversation (default "default")
  --no-worker     never start a worker in this process (use the ones already running)
  --yes           approve every tool call that asks for approval (one-shot mode; otherwise they are denied)`;

/** SWITCHBOARD_CHAT_UNTAKEN_MS shortens the wait before "no worker has taken this message" (tests). */
const listeningAfterMs = () => Number(process.env.SWITCHBOARD_CHAT_UNTAKEN_MS) || UNTAKEN_AFTER_MS;

const dim = (s: string) => (process.stderr.isTTY ? `\x1b[2m${s}\x1b[0m` : s);

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        session: { type: 'string', short: 's', default: 'default' },
        'no-worker': { type: 'boolean', default: false },
        yes: { type: 'boolean', short: 'y', default: false },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    // An unknown or incomplete option is the user's typo, not a crash: say which, and how it goes.
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}
${USAGE}
`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const config = loadConfig();
  // The terminal is for the conversation: only warnings and errors are logged unless LOG_LEVEL says otherwise.
  const log = createLogger(process.env.LOG_LEVEL ? config.logLevel : 'warn').child({ role: 'chat' });
  const redis = await ensureRedis(config.redis.url, config.redis.explicit, true, log);
  const keys = new SessionKeys(config.queue.prefix, config.queue.name);
  const connection = connectRedis(redis.url, 'switchboard-chat', log);
  const queue = createRunQueue(config.queue, connection, log);
  let worker: Role | undefined;
  // This queue's own workers: BullMQ's count spans every database and prefix of the Redis server.
  if (!values['no-worker'] && (redis.child || (await countWorkers(connection, config.queue.prefix)) === 0)) {
    process.stderr.write(dim('(no worker is running: starting one in this process)\n'));
    worker = await startWorkerRole(config, redis.url, log);
  }

  const message = positionals.join(' ').trim();
  // Interactive: the next line typed answers the question (y approves); one-shot: --yes decides.
  let answerApproval: ((line: string) => void) | undefined;
  const output: TerminalOutput = {
    progress: (line) => process.stderr.write(`${dim(line)}\n`),
    answer: (text) => process.stdout.write(`${text}\n`),
    notice: (text) => process.stderr.write(`${text}\n`),
    approve: async () => {
      if (message) {
        process.stderr.write(values.yes ? 'approved (--yes)\n' : 'denied (run with --yes to approve)\n');
        return values.yes;
      }
      process.stderr.write('Approve? [y/N] ');
      return new Promise<boolean>((resolve) => (answerApproval = (line) => resolve(/^y(es)?$/i.test(line.trim()))));
    },
  };
  const roster = AgentRoster.load(config.agents.configPath);
  const firings = createFiringQueue(config.queue.prefix, connection, log);
  const schedules = { book: new ScheduleBook(connection, config.queue.prefix, firings, config.schedules), approvers: config.approvals.approvers };
  const client = new TerminalClient(
    connectRedis(redis.url, 'switchboard-chat-reader', log),
    new Intake(new Producer(connection, queue, keys, roster.decider()), new SessionControl(connection, keys, new ApprovalDesk(connection, keys, queue)), log, {
      schedules,
      agents: new AgentCommand(connection, keys, agentFacts(config, roster, log)),
      memory: new MemoryCommand(connection, keys, memoryStoreOf(config, connection, keys), new Identities(connection, keys), roster, config.memory.mode),
    }),
    config.queue.prefix,
    values.session,
    userInfo().username,
    output,
    new ApprovalDesk(connection, keys, queue),
  );
  await client.start();
  const watch = new ListeningWatch(
    connection,
    keys,
    { redisUrl: redis.url, prefix: config.queue.prefix },
    (text) => process.stderr.write(`${text}\n`),
    listeningAfterMs(),
  );

  const shutdown = async () => {
    await client.close();
    await worker?.close();
    await queue.close();
    await firings.close();
    connection.disconnect();
    await redis.stop();
  };

  if (message) {
    process.on('SIGINT', () => void client.send('/stop'));
    const sent = await client.send(message);
    if (sent.kind === 'queued') watch.watch(sent.session, sent.done);
    const ok = sent.kind === 'handled' ? sent.ok : (await sent.done).state === 'completed';
    await shutdown();
    return ok ? 0 : 1;
  }

  process.stderr.write(dim(`Switchboard — session "${values.session}". /help for commands, Ctrl-D to quit.\n`));
  const rl = createInterface({ input: process.stdin, output: process.stderr, prompt: '> ' });
  rl.on('SIGINT', () => {
    if (client.pending > 0) void client.send('/stop');
    else rl.close();
  });
  rl.prompt();
  // Lines are sent as they are typed: a message typed during a run waits in the session's inbox
  // (and is folded into the next turn); /stop and /status act at once.
  const inFlight = new Set<Promise<unknown>>();
  rl.on('line', (line) => {
    if (answerApproval) {
      const answer = answerApproval;
      answerApproval = undefined;
      return answer(line);
    }
    const sending = client
      .send(line)
      .then(async (sent) => {
        if (sent.kind !== 'queued') return;
        watch.watch(sent.session, sent.done);
        await sent.done;
      })
      .catch((err: unknown) => output.notice(`could not send: ${err instanceof Error ? err.message : String(err)}`))
      .finally(() => client.pending === 0 && rl.prompt());
    inFlight.add(sending);
    void sending.finally(() => inFlight.delete(sending));
  });
  await new Promise<void>((resolve) => rl.once('close', () => resolve()));
  while (inFlight.size > 0) await Promise.all([...inFlight]);
  await shutdown();
  return 0;
}

main()
  .then((code) => process.exit(code))
  .catch((err: unknown) => {
    if (err instanceof ConfigError || err instanceof RedisUnavailableError) process.stderr.write(`${err.message}\n`);
    else process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
