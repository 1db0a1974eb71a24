import { afterEach, describe, expect, it } from 'vitest';
import type { App, ReceiverEvent } from '@slack/bolt';
import type { Stack } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/processes.js';
import { APP_TOKEN, startFakeSlack, TEAM_ID, type FakeSlack } from '../../fakes/slack-server.js';
import { DeferredAckSocketReceiver } from '../../../src/channels/slack/transport.js';
import { createLogger } from '../../../src/log.js';
import { eventCallback, postEvent, postInteraction, startSlackStack } from './helpers.js';

// Signed requests of kinds no listener handles: Bolt alone would answer 404 after 3 s and Slack would retry them.
const user = { id: 'U0ADA', username: 'ada', name: 'ada', team_id: TEAM_ID };
const base = { api_app_id: 'A0FAKE', token: 'legacy-verification-token', team: { id: TEAM_ID, domain: 'fake' }, user, is_enterprise_install: false };
const view = { id: 'V0VIEW', team_id: TEAM_ID, type: 'modal', callback_id: 'some_modal', state: { values: {} }, hash: '1.a', private_metadata: '' };
const INTERACTIONS: [string, Record<string, unknown>][] = [
  ['view_submission', { ...base, type: 'view_submission', view, trigger_id: '1.2.3' }],
  ['view_closed', { ...base, type: 'view_closed', view, is_cleared: false }],
  ['shortcut', { ...base, type: 'shortcut', callback_id: 'global_shortcut', trigger_id: '1.2.3', action_ts: '1.2' }],
  [
    'message_action',
    {
      ...base,
      type: 'message_action',
      callback_id: 'msg_shortcut',
      trigger_id: '1.2.3',
      action_ts: '1.2',
      channel: { id: 'C0GEN', name: 'general' },
      message: { type: 'message', ts: '1.2', text: 'hi' },
      response_url: 'http://127.0.0.1:9/x',
    },
  ],
  [
    'block_suggestion',
    { ...base, type: 'block_suggestion', action_id: 'pick', block_id: 'b', value: 'ab', container: { type: 'view', view_id: 'V0VIEW' }, view },
  ],
  [
    'block_actions (not our button)',
    {
      ...base,
      type: 'block_actions',
      trigger_id: '1.2.3',
      container: { type: 'message', message_ts: '1.2', channel_id: 'C0GEN' },
      channel: { id: 'C0GEN', name: 'general' },
      response_url: 'http://127.0.0.1:9/x',
      actions: [{ action_id: 'someone_elses', block_id: 'b', type: 'button', value: 'v', action_ts: '1.2' }],
    },
  ],
  ['no known type', { ...base, type: 'something_new' }],
];

// The HTTP stacks of this file's tests, closed after each.
let stack: Stack | undefined;
let slack: FakeSlack | undefined;
afterEach(async () => {
  await stack?.close();
  await slack?.close();
  stack = slack = undefined;
});

describe('slack: signed requests no listener handles are acknowledged at once, and skipped', () => {
  it('answers 200 with an empty body for views, shortcuts, options, foreign buttons and unknown events; queues nothing', async () => {
    slack = await startFakeSlack();
    const s = (stack = await startSlackStack('slack-unhandled', slack));
    for (const [kind, payload] of INTERACTIONS) {
      const res = await postInteraction(s.baseUrl, payload);
      expect([kind, res.status, await res.text()]).toEqual([kind, 200, '']);
    }
    // The same, posted as JSON (Bolt reads both), and an event type we do not subscribe to.
    const json = await postEvent(s.baseUrl, INTERACTIONS[0]![1]);
    expect(json.status).toBe(200);
    const reaction = await postEvent(
      s.baseUrl,
      eventCallback({ type: 'reaction_added', user: 'U0ADA', reaction: 'eyes', item: { type: 'message', channel: 'C0GEN', ts: '1.2' }, ts: '1.3' }),
    );
    expect(reaction.status).toBe(200);

    // Bodies Bolt itself cannot read (it throws a TypeError before any listener): acknowledged and skipped, not 500.
    for (const [kind, body] of [
      ['null', null],
      ['a list', [1, 2]],
      ['an event that is a string', { type: 'event_callback', event: 'x' }],
      ['a null user on a button press', { ...INTERACTIONS[5]![1], user: null }],
      ['a view that is a list', { ...INTERACTIONS[0]![1], view: [] }],
      ['a mention from a null user', eventCallback({ type: 'app_mention', user: null, text: 'hi', ts: '1.2', channel: 'C0GEN' })],
    ] as const) {
      const res = await postEvent(s.baseUrl, body);
      expect([kind, res.status]).toEqual([kind, 200]);
    }

    await new Promise((r) => setTimeout(r, 200));
    expect(await s.queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized')).toEqual({
      waiting: 0,
      active: 0,
      completed: 0,
      failed: 0,
      delayed: 0,
      prioritized: 0,
    });
    expect(await s.redis.keys(`${s.config.queue.prefix.replace(/[{}[\]*?]/g, '\\$&')}*inbox*`)).toEqual([]);
    expect(await s.redis.scard(s.keys.pending)).toBe(0);
    expect(slack.messages).toHaveLength(0);
  });
});

describe('slack: a listener that fails is still answered 500 (Slack sends the event again)', () => {
  it('a mention whose enqueue throws', async () => {
    slack = await startFakeSlack();
    const s = (stack = await startSlackStack('slack-listener-fails', slack));
    s.gateway.intake.accept = async () => {
      throw new Error('redis is down');
    };
    const res = await postEvent(
      s.baseUrl,
      eventCallback({ type: 'app_mention', user: 'U0ADA', text: '<@U0BOT> hi', ts: '1700000000.000200', channel: 'C0GEN' }),
    );
    expect(res.status).toBe(500);
  });
});

describe('slack Socket Mode: an envelope no listener acknowledges is acked empty', () => {
  const log = createLogger('silent');
  function feed(receiver: DeferredAckSocketReceiver, body: unknown, acks: unknown[]): void {
    const client = (receiver as unknown as { inner: { client: { emit(name: string, args: unknown): void } } }).inner.client;
    client.emit('slack_event', {
      ack: async (payload: unknown) => void acks.push(payload ?? 'empty ack'),
      envelope_id: 'e1',
      type: 'interactive',
      body,
      retry_num: 0,
    });
  }

  it('acks once the listeners are done without one of them acking', async () => {
    const receiver = new DeferredAckSocketReceiver(APP_TOKEN, 'http://127.0.0.1:9/api/', log, () => undefined);
    const acks: unknown[] = [];
    let processed = false;
    receiver.init({ processEvent: async (_event: ReceiverEvent) => void (processed = true) } as unknown as App);
    feed(receiver, INTERACTIONS[0]![1], acks);
    await waitFor('the ack', () => acks.length === 1);
    expect(processed).toBe(true);
    expect(acks).toEqual(['empty ack']);
  });

  /** A stand-in for Bolt: the global middleware the receiver adds runs once the body is read, then `listener`. */
  function fakeBolt(read: boolean, listener: (event: ReceiverEvent) => Promise<void>) {
    const middleware: ((args: { body: unknown; next: () => Promise<void> }) => Promise<void>)[] = [];
    return {
      use: (m: (typeof middleware)[number]) => void middleware.push(m),
      processEvent: async (event: ReceiverEvent) => {
        if (!read) throw new TypeError("Cannot read properties of null (reading 'id')");
        for (const m of middleware) await m({ body: event.body, next: async () => undefined });
        await listener(event);
      },
    } as unknown as App;
  }

  it('acks an envelope Bolt cannot read, never one whose listener failed', async () => {
    const unreadable = new DeferredAckSocketReceiver(APP_TOKEN, 'http://127.0.0.1:9/api/', log, () => undefined);
    const acks: unknown[] = [];
    unreadable.init(fakeBolt(false, async () => undefined));
    feed(unreadable, { type: 'block_actions', user: null }, acks);
    await waitFor('the ack', () => acks.length === 1);

    const failing = new DeferredAckSocketReceiver(APP_TOKEN, 'http://127.0.0.1:9/api/', log, () => undefined);
    const none: unknown[] = [];
    let failed = false;
    failing.init(
      fakeBolt(true, async () => {
        failed = true;
        throw new Error('redis is down');
      }),
    );
    feed(failing, { type: 'block_actions' }, none);
    await waitFor('the listener', () => failed);
    await new Promise((r) => setTimeout(r, 30));
    expect(none).toEqual([]);
  });

  it('still acks a handled envelope exactly once, with the listener’s response', async () => {
    const receiver = new DeferredAckSocketReceiver(APP_TOKEN, 'http://127.0.0.1:9/api/', log, () => undefined);
    const acks: unknown[] = [];
    receiver.init({ processEvent: async (event: ReceiverEvent) => event.ack({ text: 'mine' }) } as unknown as App);
    feed(receiver, { type: 'block_actions' }, acks);
    await waitFor('the ack', () => acks.length === 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(acks).toEqual([{ text: 'mine' }]);
  });
});
