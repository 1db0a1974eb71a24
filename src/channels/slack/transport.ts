import { ExpressReceiver, SocketModeReceiver, type App, type ExpressReceiverOptions, type Receiver, type ReceiverEvent } from '@slack/bolt';
import type { Express } from 'express';
import type { Logger } from '../../log.js';
import { apiBase } from './api.js';
import { slackLogger } from './logger.js';

/** Where Slack events arrive. */
export type Transport = 'http' | 'socket';

/** Socket Mode when an app-level token is configured, else the Events API over HTTP. */
export function chooseTransport(slack: { appToken: string | undefined }): Transport {
  return slack.appToken ? 'socket' : 'http';
}

/** Slack's own rule for a signed request's timestamp, applied both ways. */
const MAX_CLOCK_SKEW_S = 5 * 60;

/** The HTTP path Slack posts events, slash commands and url_verification to. */
export const EVENTS_PATH = '/slack/events';

/**
 * The Events API on the gateway's own Express app: Bolt verifies the v0 signature over the raw
 * body (refusing timestamps older than five minutes) and answers url_verification. With
 * processBeforeResponse the HTTP answer waits for our listener, so Slack's ack means "enqueued":
 * a failure to enqueue answers 500 and Slack sends the event again.
 */
export function httpReceiver(app: Express, signingSecret: string, log: Logger): ExpressReceiver {
  // Bolt refuses timestamps from the past only; one from the future is as replayable.
  app.use(EVENTS_PATH, (req, res, next) => {
    const sent = Number(req.get('x-slack-request-timestamp'));
    if (!Number.isFinite(sent) || Math.abs(Date.now() / 1000 - sent) <= MAX_CLOCK_SKEW_S) return next();
    log.warn({ skewS: Math.round(sent - Date.now() / 1000) }, 'slack request refused: its timestamp is more than 5 minutes from now');
    res.status(401).json({ ok: false, error: 'stale or future request timestamp' });
  });
  return new AckingExpressReceiver(
    {
      signingSecret,
      app,
      endpoints: EVENTS_PATH,
      processBeforeResponse: true,
      logger: slackLogger(log),
    },
    log,
  );
}

/** What a Slack request is, for the log line of one we skip (never its content: it may hold user text). */
function requestKind(body: unknown): string {
  const b = (typeof body === 'object' && body !== null ? body : {}) as { type?: unknown; command?: unknown };
  if (typeof b.command === 'string') return `command ${b.command.slice(0, 40)}`;
  return typeof b.type === 'string' ? b.type.slice(0, 40) : 'unknown';
}

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null;

type Bolt = Pick<App, 'processEvent'> & Partial<Pick<App, 'use'>>;

/**
 * Every signed request gets an answer at once, unless a listener failed:
 * - one no listener acknowledges (a view_submission, a shortcut, a button that is not ours, a body
 *   of no known type) would wait for Bolt's 3-second timeout, then get 404, and Slack would send
 *   it again: it is acknowledged empty once the listeners are done;
 * - one Bolt itself cannot read (it throws a TypeError on `"user": null`, a `view` that is a list…,
 *   before any listener runs) would be a 500, sent again forever: it is acknowledged and skipped.
 * A failure after Bolt has read the request (a global middleware marks that point) is a
 * listener's, e.g. Redis being down: no ack, so Slack delivers it again.
 */
function acknowledgingAll(app: Bolt, log: Logger): Pick<App, 'processEvent'> {
  const read = new WeakSet<object>();
  const marks = typeof app.use === 'function';
  app.use?.(async ({ body, next }) => {
    if (isObject(body)) read.add(body);
    await next();
  });
  return {
    processEvent: async (event: ReceiverEvent) => {
      let acked = false;
      const ack = async (response?: unknown) => {
        acked = true;
        await event.ack(response);
      };
      try {
        await app.processEvent({ ...event, ack });
      } catch (err) {
        // Unreadable only if thrown before Bolt acked or reached the middleware (and we could tell).
        if (!marks || acked || (isObject(event.body) && read.has(event.body))) throw err;
        log.warn({ kind: requestKind(event.body), err: err instanceof Error ? err.message : String(err) }, 'slack request skipped: Bolt cannot read it');
        await event.ack();
        return;
      }
      if (acked) return;
      log.info({ kind: requestKind(event.body), retryNum: event.retryNum }, 'slack request skipped: no listener handles it');
      await event.ack();
    },
  };
}

class AckingExpressReceiver extends ExpressReceiver {
  constructor(
    options: ExpressReceiverOptions,
    private readonly log: Logger,
  ) {
    super(options);
  }

  override init(bolt: App): void {
    super.init(acknowledgingAll(bolt, this.log) as App);
  }
}

export type SocketState = 'connecting' | 'connected' | 'disconnected';

/**
 * Socket Mode, acknowledging an envelope only once our listener has enqueued it (Bolt's own
 * receiver acks first): an event that could not be enqueued is not acked, so Slack sends it again.
 */
export class DeferredAckSocketReceiver implements Receiver {
  private readonly inner: SocketModeReceiver;

  constructor(
    appToken: string,
    apiUrl: string | undefined,
    private readonly log: Logger,
    onState: (state: SocketState, detail?: string) => void,
  ) {
    this.inner = new SocketModeReceiver({
      appToken,
      logger: slackLogger(log),
      installerOptions: { clientOptions: { slackApiUrl: apiBase(apiUrl) } },
    });
    const client = this.inner.client;
    client.on('connecting', () => onState('connecting'));
    client.on('connected', () => onState('connected'));
    client.on('reconnecting', () => onState('disconnected', 'Socket Mode reconnecting'));
    client.on('disconnected', () => onState('disconnected', 'Socket Mode disconnected'));
    // A socket error usually means the connection is gone; the client only notices at its next
    // ping timeout, and until it reconnects readiness must not claim "connected".
    client.on('error', (err: unknown) => onState('disconnected', `Socket Mode error: ${err instanceof Error ? err.name : String(err)}`));
  }

  init(app: App): void {
    const acking = acknowledgingAll(app, this.log);
    const deferred = {
      processEvent: async (event: ReceiverEvent) => {
        let response: unknown;
        let acked = false;
        await acking.processEvent({
          ...event,
          ack: async (r?: unknown) => {
            acked = true;
            response = r;
          },
        });
        if (acked) await event.ack(response);
      },
    };
    this.inner.init(deferred as unknown as App);
  }

  start(): Promise<unknown> {
    return this.inner.start();
  }

  stop(): Promise<unknown> {
    return this.inner.stop();
  }
}
