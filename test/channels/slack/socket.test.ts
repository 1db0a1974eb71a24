import { afterEach, describe, expect, it } from 'vitest';
import { startStack, type Stack, readyz } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/processes.js';
import { APP_TOKEN, BOT_TOKEN, startFakeSlack, type FakeSlack } from '../../fakes/slack-server.js';
import type { App, ReceiverEvent } from '@slack/bolt';
import { chooseTransport, DeferredAckSocketReceiver } from '../../../src/channels/slack/transport.js';
import { createLogger } from '../../../src/log.js';
import { parseEnv } from '../../../src/config/load.js';
import { deriveConfig } from '../../../src/config/config.js';
import { answers, appMention, deferred, eventCallback, newUserTexts, nextTs, postEvent } from './helpers.js';

describe('slack transport selection', () => {
  const slackOf = (env: Record<string, string>) => deriveConfig(parseEnv(env)).channels.slack!;

  it('uses the Events API over HTTP with a signing secret, Socket Mode when an app token is set', () => {
    expect(chooseTransport(slackOf({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's' }))).toBe('http');
    expect(chooseTransport(slackOf({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_APP_TOKEN: 'xapp-1' }))).toBe('socket');
    expect(chooseTransport(slackOf({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's', SLACK_APP_TOKEN: 'xapp-1' }))).toBe('socket');
  });

  it('refuses a bot token with neither a signing secret nor an app token', () => {
    expect(() => parseEnv({ SLACK_BOT_TOKEN: 'xoxb-1' })).toThrow(/SLACK_SIGNING_SECRET/);
  });
});

describe('Socket Mode acknowledgement', () => {
  /** Feeds one envelope to the receiver the way the socket client does, with a recording ack. */
  function envelope(receiver: DeferredAckSocketReceiver, acks: unknown[]): void {
    const client = (receiver as unknown as { inner: { client: { emit(name: string, args: unknown): void } } }).inner.client;
    client.emit('slack_event', {
      ack: async (payload: unknown) => void acks.push(payload ?? 'ack'),
      envelope_id: 'e1',
      type: 'events_api',
      body: { type: 'event_callback' },
      retry_num: 0,
    });
  }
  const log = createLogger('silent');

  it('sends the ack only after the listener has finished (enqueued), with the listener’s response', async () => {
    const receiver = new DeferredAckSocketReceiver(APP_TOKEN, 'http://127.0.0.1:9/api/', log, () => undefined);
    const gate = deferred();
    const acks: unknown[] = [];
    let listenerDone = false;
    receiver.init({
      processEvent: async (event: ReceiverEvent) => {
        await event.ack({ response_type: 'ephemeral', text: 'ok' });
        await gate.promise;
        listenerDone = true;
      },
    } as unknown as App);
    envelope(receiver, acks);
    await new Promise((r) => setTimeout(r, 20));
    expect(acks).toEqual([]);
    gate.resolve();
    await waitFor('the ack', () => acks.length === 1);
    expect(listenerDone).toBe(true);
    expect(acks).toEqual([{ response_type: 'ephemeral', text: 'ok' }]);
  });

  it('never acks an envelope whose listener failed (Slack delivers it again)', async () => {
    const receiver = new DeferredAckSocketReceiver(APP_TOKEN, 'http://127.0.0.1:9/api/', log, () => undefined);
    const acks: unknown[] = [];
    const failed = deferred();
    receiver.init({
      processEvent: async (event: ReceiverEvent) => {
        await event.ack();
        failed.resolve();
        throw new Error('redis is down');
      },
    } as unknown as App);
    envelope(receiver, acks);
    await failed.promise;
    await new Promise((r) => setTimeout(r, 20));
    expect(acks).toEqual([]);
  });
});

describe('slack Socket Mode against a fake Slack (apps.connections.open + WebSocket)', () => {
  let stack: Stack | undefined;
  let slack: FakeSlack | undefined;
  afterEach(async () => {
    await stack?.close();
    await slack?.close();
    stack = undefined;
    slack = undefined;
  });

  it('connects with the app token, acks and answers an event in its thread, drops a redelivery, serves /ask over the socket', async () => {
    slack = await startFakeSlack();
    // LINK_PREVIEWS=1: answers() tells answers from status messages by their unfurl arguments (see helpers.ts).
    stack = await startStack('slack-socket', { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_APP_TOKEN: APP_TOKEN, SLACK_API_URL: slack.apiUrl, LINK_PREVIEWS: '1' });
    const s = stack;
    const fake = slack;
    const ready = async () => (await (await readyz(s)).json()).channels?.slack;
    await waitFor('socket mode connected', async () => (await ready())?.connected === true);
    expect(fake.callsOf('apps.connections.open').map((c) => c.token)).toEqual([APP_TOKEN]);
    expect(fake.socket.connections).toBe(1);
    // No HTTP route in Socket Mode.
    expect((await postEvent(s.baseUrl, { type: 'url_verification', challenge: 'x' })).status).toBe(404);

    s.fake.setHandler((req) => ({ content: `re: ${newUserTexts(req.body).join(' | ')}` }));
    const ts = nextTs();
    const envelope = fake.socket.send(eventCallback(appMention('C0SOCK', ts, 'over the socket')));
    await waitFor('the ack', () => fake.socket.acks.some((a) => a.envelope_id === envelope));
    await waitFor('the answer', () => answers(fake).length === 1);
    expect(answers(fake)[0]).toMatchObject({ channel: 'C0SOCK', thread_ts: ts, text: 're: over the socket' });

    // A redelivery over the socket (retry_attempt 1) is acked and dropped.
    const again = fake.socket.send(eventCallback(appMention('C0SOCK', ts, 'over the socket')), 'events_api', 1);
    await waitFor('the second ack', () => fake.socket.acks.some((a) => a.envelope_id === again));

    const command = fake.socket.send(
      {
        token: 'legacy',
        team_id: 'T0FAKE',
        channel_id: 'C0SOCK',
        user_id: 'U0ADA',
        user_name: 'ada',
        command: '/ask',
        text: 'status',
        trigger_id: '1.2.3',
        response_url: 'http://127.0.0.1:9/x',
        api_app_id: 'A0FAKE',
      },
      'slash_commands',
    );
    const ack = await waitFor('the command ack', () => fake.socket.acks.find((a) => a.envelope_id === command));
    expect(ack.payload).toEqual({ response_type: 'ephemeral', text: expect.stringMatching(/^No run is active\./) });
    await waitFor('settled', async () => (await s.queue.getJobCounts('completed')).completed === 1);
    expect(s.fake.requests).toHaveLength(1);
    expect(answers(fake)).toHaveLength(1);

    // A cut connection shows in readiness, and the client reconnects with a fresh apps.connections.open.
    fake.socket.drop();
    await waitFor('readiness to show the drop', async () => (await ready())?.connected === false);
    expect((await ready()).detail).toMatch(/^Socket Mode (error|reconnecting|disconnected)/);
    await waitFor('the reconnection', async () => (await ready())?.connected === true, 20_000);
    expect(fake.callsOf('apps.connections.open').length).toBeGreaterThanOrEqual(2);
  });
});
