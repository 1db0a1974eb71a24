import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { sessionKeyOf } from '../../src/channels/session-key.js';
import { PLACEHOLDER } from '../../src/channels/kit/pieces.js';
import { workspaceFolderName } from '../../src/tools/workspace.js';
import { startFakeOpenAI } from '../fakes/openai-server.js';
import { startFakeTelegram, TOKEN, type FakeTelegram } from '../fakes/telegram-server.js';
import { spawnNode, waitFor, type Spawned } from '../helpers/processes.js';
import { dropPrefix, testRedis, uniquePrefix } from '../helpers/redis.js';
import { computeFigures, unaccounted, type Figures, type SentMessage } from './figures.js';
import { Fleet } from './fleet.js';
import { ModelDesk } from './model-desk.js';
import { JOURNAL, JOURNAL_END, userText } from './model.js';
import { Rng } from './rng.js';
import { DELIVERY_HOLD_MS, KillScheduler, type Freeze, type Kill, type StrikePlan } from './scheduler.js';
import { productEnv } from '../helpers/product-env.js';

export interface ChaosOptions {
  workers: number;
  sessions: number;
  messages: number;
  /** At least this many SIGKILLs, spread over the phases in turn. */
  kills: number;
  /** SIGSTOPs past the lock. */
  freezes: number;
  /** Seeds the plan: which chat each DM goes to and its token (the timing is never the same twice). */
  seed: number;
  /**
   * Pause between two DMs (a follow-up of the same session comes after 100–400 ms instead).
   * Default: the DMs spread over about as long as the strikes take (one every ~3.5 s), so the
   * workers are busy while the kills land.
   */
  paceMs?: [number, number];
  /** How long the run may take to settle after the last strike. */
  quiesceMs: number;
  /**
   * Runs per worker process (default 4). At 1 a kill strikes only the run it targets; above it,
   * the other runs on that worker die too, at whatever step they are — a reply piece killed in
   * the instant between being journaled and being sent is then not sent again (its outcome is
   * unknown, and an unknown post is never repeated), which the figures count as lost.
   */
  concurrency?: number;
  log: (line: string) => void;
}

export interface ChaosResult {
  figures: Figures;
  kills: Kill[];
  freezes: Freeze[];
  /** Every message had an answer or a notice and no run was left when it stopped (else it hit quiesceMs). */
  settled: boolean;
  wallMs: number;
}

const LOCK_MS = 4_000;
const MODEL_LATENCY_MS: [number, number] = [300, 1_500];
/** A session's next DM right behind its previous one, so it arrives during that turn and is folded. */
const FOLLOW_UP_MS: [number, number] = [100, 400];
const FOLLOW_UP_CHANCE = 0.3;
/** No model call and no Bot API call (other than polling) for this long: nothing is still going on. */
const QUIET_MS = 3_000;
const CHAT_ID_BASE = 810_000;
/** The run queue's name (src/config/config.ts): its job counts tell when no run is left to finish. */
const RUN_QUEUE = 'runs';
/** About how often a strike lands: the gap between strikes plus the wait for the phase. */
const STRIKE_EVERY_MS = 3_500;

/**
 * One chaos measurement of the whole pipeline: a gateway doing Telegram long polling against a
 * fake Bot API, `workers` worker processes, the scripted journal model, DMs over `sessions`
 * chats, and a scheduler killing and freezing busy workers meanwhile. Everything it starts is
 * stopped by pid and every key under its prefix is removed before it returns.
 */
export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  const rng = new Rng(o.seed);
  const prefix = uniquePrefix('chaos');
  const redis = testRedis();
  const tg = await startFakeTelegram();
  const fake = await startFakeOpenAI();
  const root = await mkdtemp(join(tmpdir(), 'sb-chaos-'));
  const plan = planMessages(rng, o.sessions, o.messages);
  const chatOf = new Map(plan.map((m) => [m.session, m.chatId]));
  const sessionOf = new Map(plan.map((m) => [m.token, m.session]));
  const journalPath = (chatId: number) => join(root, workspaceFolderName(sessionKeyOf({ platform: 'telegram', conversation: String(chatId) })), JOURNAL);
  const env = productEnv(
    { prefix, modelUrl: fake.baseURL, root },
    {
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: tg.apiRoot,
      LOCK_DURATION_MS: String(LOCK_MS),
      // Under twice the lock, so a dead worker's run is noticed by the first or second check after its lock expires.
      STALLED_INTERVAL_MS: '2000',
      WORKER_CONCURRENCY: String(o.concurrency ?? 4),
      RECONCILE_INTERVAL_MS: '5000',
      // The product as shipped: every turn reads the asker's memory (productEnv turns it off for the other tests).
      MEMORY: 'person',
    },
  );
  const queue = new Queue(RUN_QUEUE, { connection: redis, prefix });
  const model = new ModelDesk(
    fake,
    (token) => sessionOf.get(token),
    () => rng.between(...MODEL_LATENCY_MS),
  );
  const fleet = new Fleet(env, o.workers);
  let gateway: Spawned | undefined;
  let sentAll = false;
  try {
    for (const chatId of new Set(chatOf.values())) {
      await mkdir(join(journalPath(chatId), '..'), { recursive: true });
      await writeFile(journalPath(chatId), `${JOURNAL_END}\n`);
    }
    gateway = spawnNode('src/cli/main.ts', ['gateway'], env);
    const gw = gateway;
    await waitFor(
      'the gateway to poll Telegram',
      () => tg.pendingPolls() > 0 || (gw.child.exitCode !== null && Promise.reject(new Error(`gateway exited: ${gw.stderr()}`))),
      30_000,
    );
    await fleet.fill();
    o.log(`gateway pid ${gateway.pid}, workers up; ${plan.length} DMs over ${chatOf.size} chats, seed ${o.seed}, prefix ${prefix}`);

    // Every message has an answer or a notice (an honest line) standing for it.
    const settled = () => unaccounted(plan, tg.sent).length === 0;
    const strikePlan: StrikePlan = { kills: o.kills, freezes: o.freezes, gapMs: [1_500, 4_000], freezeMs: [6_000, 8_000], windowMs: 6_000 };
    const scheduler = new KillScheduler(fleet, model, rng, strikePlan, {
      sent: () => sentAll,
      settled,
      journalFile: (session) => journalPath(chatOf.get(session)!),
      log: o.log,
    });
    // An answer is posted as its placeholder, then edited into it: the kills alternate between the
    // two writes (the placeholder stored and its id not yet known; the edit made and not yet confirmed).
    let holdFill = false;
    tg.holdResponses((call) => {
      const placeholder = call.method === 'sendMessage' && call.body.disable_notification !== true && call.body.text === PLACEHOLDER;
      const fill = call.method === 'editMessageText' && String(call.body.text).startsWith('done');
      if (!(holdFill ? fill : placeholder)) return 0;
      const session = sessionKeyOf({ platform: 'telegram', conversation: String(call.body.chat_id) });
      if (!scheduler.answerPosted(session)) return 0;
      holdFill = !holdFill;
      return DELIVERY_HOLD_MS;
    });
    const strikes = scheduler.run();
    await sendAll(tg, plan, rng, o.paceMs ?? defaultPace(o.kills, o.messages));
    sentAll = true;
    await strikes;
    o.log(`strikes over (${scheduler.kills.length} kills, ${scheduler.freezes.length} freezes); waiting for the answers`);
    const strikesOver = Date.now();
    const quiet = await waitQuiet({ tg, model, fleet, queue, settled }, o.quiesceMs);
    o.log(quiet ? `settled ${Date.now() - strikesOver} ms after the strikes` : `not settled ${o.quiesceMs} ms after the strikes`);

    const journals = new Map<number, string>();
    for (const chatId of new Set(chatOf.values())) journals.set(chatId, await readFile(journalPath(chatId), 'utf8'));
    if (fleet.failures.length > 0) o.log(`workers that did not start: ${fleet.failures.join('; ')}`);
    // A tool error the model saw is named, so the figure can be looked up.
    for (const post of tg.sent) if (post.text.startsWith('done-with-error')) o.log(`done-with-error in chat ${post.chatId}: ${post.text.slice(0, 300)}`);
    const figures = computeFigures({
      messages: plan,
      posts: tg.sent,
      journals,
      kills: scheduler.kills,
      freezes: scheduler.freezes,
      runsStarted: fleet.runsStarted,
      modelCalls: model.calls.length,
    });
    return { figures, kills: scheduler.kills, freezes: scheduler.freezes, settled: quiet, wallMs: Date.now() - started };
  } finally {
    await stopGateway(gateway);
    await fleet.close();
    await queue.close();
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await fake.close();
    await tg.close();
    await rm(root, { recursive: true, force: true });
  }
}

function defaultPace(kills: number, messages: number): [number, number] {
  const mean = Math.max(250, (kills * STRIKE_EVERY_MS) / messages);
  return [Math.round(mean * 0.4), Math.round(mean * 1.6)];
}

/** A DM to send; a follow-up goes right behind the previous DM, of the same chat. */
type PlannedDm = SentMessage & { followUp: boolean };

/** `messages` DMs over `sessions` chats in a random order that keeps each chat's own order. */
function planMessages(rng: Rng, sessions: number, messages: number): PlannedDm[] {
  const left = Array.from({ length: sessions }, (_, i) => Math.floor(messages / sessions) + (i < messages % sessions ? 1 : 0));
  const seqs = left.map(() => 0);
  const out: PlannedDm[] = [];
  let last = -1;
  while (out.length < messages) {
    const followUp = last >= 0 && left[last]! > 0 && rng.next() < FOLLOW_UP_CHANCE;
    const open = left.flatMap((n, i) => (n > 0 ? [i] : []));
    const i = followUp ? last : rng.pick(open)!;
    left[i]! -= 1;
    const seq = ++seqs[i]!;
    const chatId = CHAT_ID_BASE + i;
    const token = `s${i}-m${seq}-${rng
      .between(0, 36 ** 4 - 1)
      .toString(36)
      .padStart(4, '0')}`;
    out.push({ token, session: sessionKeyOf({ platform: 'telegram', conversation: String(chatId) }), chatId, seq, followUp });
    last = i;
  }
  return out;
}

async function sendAll(tg: FakeTelegram, plan: readonly PlannedDm[], rng: Rng, paceMs: [number, number]): Promise<void> {
  for (const [i, m] of plan.entries()) {
    if (i > 0) await sleep(m.followUp ? rng.between(...FOLLOW_UP_MS) : rng.between(...paceMs));
    const from = { id: m.chatId, is_bot: false, first_name: `User ${m.chatId}` };
    tg.pushUpdate({ message: tg.message({ chat: { id: m.chatId, type: 'private' }, from, text: userText(m.token) }) });
  }
}

interface Watched {
  tg: FakeTelegram;
  model: ModelDesk;
  fleet: Fleet;
  queue: Queue;
  settled: () => boolean;
}

/**
 * Waits until every message has an answer or a notice, no worker is frozen, no run job is left (a killed
 * worker's job stays active until a stalled check hands it on, and may re-deliver then), and
 * nothing has called the model or the Bot API for a while; false when `timeoutMs` ran out first.
 */
async function waitQuiet(w: Watched, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const lastCall = Math.max(w.model.lastCallAt(), lastBotApiCallAt(w.tg));
    if (w.settled() && !w.fleet.anyFrozen() && w.model.inFlight().length === 0 && Date.now() - lastCall >= QUIET_MS) {
      const counts = await w.queue.getJobCounts('active', 'wait', 'delayed', 'prioritized', 'waiting-children');
      if (Object.values(counts).every((n) => n === 0)) return true;
    }
    await sleep(200);
  }
  return false;
}

/** When the workers or the gateway last called the Bot API for anything but polling. */
function lastBotApiCallAt(tg: FakeTelegram): number {
  for (let i = tg.calls.length - 1; i >= 0; i--) if (tg.calls[i]!.method !== 'getUpdates') return tg.calls[i]!.at;
  return 0;
}

async function stopGateway(gateway: Spawned | undefined): Promise<void> {
  if (!gateway) return;
  gateway.kill('SIGTERM');
  const stopped = await Promise.race([gateway.exited.then(() => true), sleep(10_000).then(() => false)]);
  if (!stopped) {
    gateway.kill('SIGKILL');
    await gateway.exited;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
