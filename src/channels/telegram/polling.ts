import type { Api } from 'grammy';
import type { Update } from 'grammy/types';
import type { Logger } from '../../log.js';
import { classifyTelegramError, describeTelegramError, grammySignal, withTelegramRetries } from './errors.js';
import { sleep } from '../../lib/sleep.js';
import type { PollingLease } from './lease.js';

export interface PollerOptions {
  api: Api;
  /** Hands one update to the channel; a throw leaves it unconfirmed, to be fetched again. */
  handle: (update: Update) => Promise<void>;
  log: Logger;
  /** Shared with the other gateways of this Redis: only the holder polls. */
  lease?: PollingLease;
  allowedUpdates: ReadonlyArray<Exclude<keyof Update, 'update_id'>>;
  /** Long-poll timeout in seconds. */
  pollTimeoutSec?: number;
  /** First wait after a 409 Conflict; doubled per conflict up to `conflictMaxMs`. */
  conflictBackoffMs?: number;
  conflictMaxMs?: number;
  /** A conflict streak is forgotten after this long without a 409. */
  conflictQuietMs?: number;
  /** Wait after a network error or a failed update. */
  errorBackoffMs?: number;
  /** How often a standby gateway tries the lease, and how often the holder renews it (a third of its TTL). */
  standbyRetryMs?: number;
}

export interface PollerState {
  connected: boolean;
  detail?: string;
}

/**
 * Long polling with getUpdates, supervised: updates are handled in order and confirmed (by the
 * next offset) only once handled, so an update whose hand-over to the queue failed is fetched
 * again. A 409 Conflict (another process polls this token, or a webhook is set) is logged once
 * per episode, shown in readiness and backed off exponentially instead of retried in a loop.
 */
export class Poller {
  private offset = 0;
  private stopped = true;
  private controller: AbortController | undefined;
  private stopWait = new AbortController();
  private loop: Promise<void> | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private holding = false;
  private conflicts = 0;
  private lastConflictAt = 0;
  private resumedLogged = false;
  private failing = false;
  /** A poll has succeeded since the last failure: long polls from now on. */
  private verified = false;
  private webhookCleared = false;
  state: PollerState = { connected: false, detail: 'starting' };

  constructor(private readonly options: PollerOptions) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.stopWait = new AbortController();
    this.loop = this.run().catch((err: unknown) => {
      this.options.log.error({ error: describeTelegramError(err) }, 'telegram poller stopped unexpectedly');
      this.state = { connected: false, detail: `poller stopped: ${describeTelegramError(err)}` };
    });
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopWait.abort();
    this.controller?.abort();
    clearInterval(this.renewTimer);
    await this.loop;
    if (this.holding) {
      // Confirm what was handled, so the next poller starts after it (getUpdates with the next offset).
      if (this.offset > 0)
        await this.options.api.getUpdates({ offset: this.offset, limit: 1, timeout: 0 }, grammySignal(AbortSignal.timeout(2_000))).catch(() => undefined);
      await this.options.lease?.release().catch((err: unknown) => this.options.log.warn({ err }, 'could not release the telegram polling lease'));
      this.holding = false;
    }
    this.state = { connected: false, detail: 'stopped' };
  }

  private async run(): Promise<void> {
    const o = this.options;
    const timeout = o.pollTimeoutSec ?? 30;
    const standbyMs = o.standbyRetryMs ?? 5_000;
    while (!this.stopped) {
      if (!(await this.holdLease(standbyMs))) {
        await sleep(standbyMs, this.stopWait.signal);
        continue;
      }
      let updates: Update[];
      this.controller = new AbortController();
      try {
        if (!this.webhookCleared) {
          // A webhook left from another deployment makes getUpdates answer 409; polling means no webhook.
          await withTelegramRetries(() => o.api.deleteWebhook({ drop_pending_updates: false }, grammySignal(this.controller!.signal)), {
            idempotent: true,
            attempts: 2,
            signal: this.controller.signal,
          });
          this.webhookCleared = true;
        }
        // Until a poll has succeeded, ask without waiting: readiness should not wait out a long poll.
        const wait = this.verified ? timeout : 0;
        updates = await o.api.getUpdates(
          { offset: this.offset, timeout: wait, limit: 100, allowed_updates: o.allowedUpdates },
          grammySignal(this.controller.signal),
        );
      } catch (err) {
        if (this.stopped || this.controller.signal.aborted) continue;
        await this.pollFailed(err);
        continue;
      }
      this.pollSucceeded();
      for (const update of updates) {
        try {
          await o.handle(update);
          this.offset = update.update_id + 1;
        } catch (err) {
          // Not confirmed: it comes back with the next getUpdates (its duplicate check drops a second copy).
          o.log.error({ err, updateId: update.update_id }, 'telegram update not handed over; fetching it again');
          this.state = { connected: false, detail: `cannot hand updates to the queue: ${err instanceof Error ? err.message : String(err)}` };
          await sleep(o.errorBackoffMs ?? 3_000, this.stopWait.signal);
          break;
        }
      }
    }
  }

  /** True while this gateway may poll: it holds the lease (renewed in the background), or there is no lease. */
  private async holdLease(standbyMs: number): Promise<boolean> {
    const { lease, log } = this.options;
    if (!lease || this.holding) return true;
    let got: boolean;
    try {
      got = await lease.acquire();
    } catch (err) {
      this.state = { connected: false, detail: `cannot reach Redis for the polling lease: ${err instanceof Error ? err.message : String(err)}` };
      return false;
    }
    if (!got) {
      if (this.state.detail?.startsWith('standby') !== true)
        log.info({ holder: await lease.currentHolder().catch(() => null) }, 'another gateway polls this telegram bot; standing by');
      this.state = { connected: true, detail: 'standby: another gateway holds the polling lease for this bot' };
      return false;
    }
    this.holding = true;
    this.verified = false;
    log.info({ lease: lease.key }, 'telegram polling lease taken');
    this.renewTimer = setInterval(() => void this.renew(), Math.min(standbyMs, lease.ttlMs / 3));
    this.renewTimer.unref();
    return true;
  }

  private async renew(): Promise<void> {
    const { lease, log } = this.options;
    if (!lease || !this.holding || this.stopped) return;
    try {
      if (await lease.acquire()) return;
      log.warn({ lease: lease.key }, 'telegram polling lease lost to another gateway; standing by');
      this.holding = false;
      this.verified = false;
      clearInterval(this.renewTimer);
      this.controller?.abort();
    } catch (err) {
      log.warn({ err }, 'could not renew the telegram polling lease');
    }
  }

  private async pollFailed(err: unknown): Promise<void> {
    const o = this.options;
    const failure = classifyTelegramError(err);
    const why = describeTelegramError(err);
    this.verified = false;
    if (failure.kind === 'conflict') {
      const now = Date.now();
      // Two pollers alternate (each one's poll ends the other's), so a streak is one episode until it has been quiet a while.
      const newStreak = now - this.lastConflictAt > (o.conflictQuietMs ?? 600_000);
      if (newStreak) this.conflicts = 0;
      this.lastConflictAt = now;
      this.conflicts += 1;
      const wait = Math.min(o.conflictMaxMs ?? 120_000, (o.conflictBackoffMs ?? 5_000) * 2 ** (this.conflicts - 1));
      if (newStreak) {
        this.resumedLogged = false;
        o.log.warn(
          { error: why, backoffMs: wait },
          'telegram 409 Conflict: another process is polling this bot token (or a webhook is set); backing off. Run one poller per token, or use TELEGRAM_WEBHOOK_URL',
        );
      }
      this.state = { connected: false, detail: `409 Conflict: another process polls this bot token (${why}); retrying in ${Math.round(wait / 1000)} s` };
      this.webhookCleared = !/webhook/i.test(why);
      await sleep(wait, this.stopWait.signal);
      return;
    }
    const wait = failure.kind === 'rate_limited' ? failure.retryAfterMs : failure.kind === 'unauthorized' ? 60_000 : (o.errorBackoffMs ?? 3_000);
    if (!this.failing)
      o.log[failure.kind === 'unauthorized' ? 'error' : 'warn'](
        { error: why, waitMs: wait },
        failure.kind === 'unauthorized' ? 'telegram rejected the bot token (check TELEGRAM_BOT_TOKEN)' : 'telegram getUpdates failed; retrying',
      );
    this.failing = true;
    this.state = { connected: false, detail: failure.kind === 'unauthorized' ? `the bot token was rejected (${why})` : `getUpdates failing: ${why}` };
    await sleep(wait, this.stopWait.signal);
  }

  private pollSucceeded(): void {
    const o = this.options;
    const sinceConflict = Date.now() - this.lastConflictAt;
    const recentConflict = this.lastConflictAt > 0 && sinceConflict <= (o.conflictQuietMs ?? 600_000);
    if (recentConflict && !this.resumedLogged) {
      o.log.info({ conflicts: this.conflicts }, 'telegram polling resumed after a conflict');
      this.resumedLogged = true;
    }
    if (this.failing) o.log.info('telegram polling recovered');
    this.failing = false;
    this.verified = true;
    this.state = recentConflict
      ? { connected: true, detail: `polling, but another process polled this token ${Math.round(sinceConflict / 1000)} s ago (409 Conflict)` }
      : { connected: true };
  }
}
