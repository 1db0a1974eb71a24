import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { DiscordOutbound, FOLDED_NOTE, foldedNote } from '../../../src/channels/discord/outbound.js';
import { honestLine } from '../../../src/run/delivery/honest-line.js';
import { DiscordRest } from '../../../src/channels/discord/rest.js';
import { interactionKey, interactionOf, ORIGINAL, UPLOAD_MAX_BYTES } from '../../../src/channels/discord/ids.js';
import { normaliseCommand, normaliseMessage } from '../../../src/channels/discord/inbound.js';
import type { InboundMessage, OutgoingFile } from '../../../src/channels/types.js';
import { memoryLedger } from '../../../src/channels/kit/pieces.js';
import { createLogger } from '../../../src/log.js';
import { startFakeDiscord, UPLOAD_LIMIT_BYTES, type FakeDiscord, type FakeInteraction } from '../../fakes/discord-server.js';
import { dropPrefix, testRedis, uniquePrefix } from '../../helpers/redis.js';

const log = createLogger('silent');
const SIXTEEN_MINUTES = 16 * 60_000;

let fake: FakeDiscord;
let redis: Redis;
let prefix: string;

beforeAll(async () => {
  fake = await startFakeDiscord();
  redis = testRedis();
  prefix = uniquePrefix('discord-out');
});
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
  await fake.close();
});
afterEach(() => {
  fake.requests.length = 0;
});

function outbound(now?: () => number): DiscordOutbound {
  const rest = new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl });
  return new DiscordOutbound({ rest, log, downloadHosts: [new URL(fake.base).host], redis, prefix, ...(now && { now }) });
}

/** A user's mention in #general, as the gateway would normalise it. */
function mention(text = 'do it'): InboundMessage {
  const m = fake.userMessage({ channel: fake.ids.general, content: `<@${fake.ids.app}> ${text}` });
  const gate = normaliseMessage(
    {
      id: m.id,
      channelId: m.channel_id,
      guildId: fake.ids.guild,
      author: { id: fake.ids.alice, name: 'Alice', bot: false },
      content: m.content,
      system: false,
      webhook: false,
      mentionedUserIds: [fake.ids.app],
      mentionedRoleIds: [],
      attachments: [],
      userNames: {},
    },
    { id: fake.ids.app },
    Date.now(),
  );
  if (!gate.ok) throw new Error('not addressed');
  return gate.message;
}

/** A deferred /ask in #general. */
async function deferredAsk(prompt = 'do it'): Promise<{ ix: FakeInteraction; to: InboundMessage }> {
  const ix = fake.slash({ name: 'ask', channel: fake.ids.general, prompt });
  const rest = new DiscordRest({ token: fake.token, apiUrl: fake.apiUrl });
  await rest.request('POST', `/interactions/${ix.id}/${ix.token}/callback`, { auth: false, body: { type: 5, data: { flags: 0 } } });
  const to = normaliseCommand(
    {
      id: ix.id,
      token: ix.token,
      applicationId: fake.ids.app,
      name: 'ask',
      prompt,
      channelId: fake.ids.general,
      guildId: fake.ids.guild,
      user: { id: fake.ids.alice, name: 'Alice' },
    },
    Date.now(),
  );
  return { ix, to };
}

const msg = (id: string) => fake.messages.find((m) => m.id === id)!;

/** About 4,500 characters with a code block across the 2,000 boundary. */
function longAnswer(): string {
  const code = Array.from({ length: 60 }, (_, i) => `print("line ${i}")  # ${'='.repeat(20)}`).join('\n');
  return `Here is the script.\n\n\`\`\`python\n${code}\n\`\`\`\n\n${'That is all it does. '.repeat(90)}`;
}

describe('DiscordOutbound: mentions and DMs (channel messages)', () => {
  it("the answer replies to the user's message, pinging only that user", async () => {
    const to = mention();
    const ids = await outbound().post(to, 'Done: **3 files**. @everyone @here <@&123> <@456> see this', 'answer');
    expect(ids).toHaveLength(1);
    const posted = msg(ids[0]!);
    expect(posted).toMatchObject({
      channel_id: fake.ids.general,
      content: 'Done: **3 files**. @everyone @here <@&123> <@456> see this',
      message_reference: { message_id: to.replyTo },
    });
    expect(posted.pings).toEqual([`replied:${fake.ids.alice}`]);
    const [req] = fake.calls('POST', /\/messages$/);
    expect(req!.body.allowed_mentions).toEqual({ parse: [], replied_user: true });
    expect(req!.body.enforce_nonce).toBe(true);
  });

  it('a 4,500-character answer goes as ordered pieces under 2,000 with balanced code fences, only the first a reply', async () => {
    const to = mention();
    const ids = await outbound().post(to, longAnswer(), 'answer');
    expect(ids.length).toBe(3);
    const pieces = ids.map(msg);
    expect(pieces.map((p) => p.id)).toEqual([...pieces.map((p) => p.id)].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)));
    for (const p of pieces) {
      expect(p.content.length).toBeLessThanOrEqual(2000);
      expect((p.content.match(/^```/gm) ?? []).length % 2).toBe(0);
      expect(p.pings.filter((x) => !x.startsWith('replied:'))).toEqual([]);
    }
    expect(pieces.map((p) => p.message_reference?.message_id)).toEqual([to.replyTo, undefined, undefined]);
    expect(pieces.map((p) => p.content).join('\n')).toContain('print("line 59")');
  });

  it('the status message is a reply that pings no one; it is edited in place and removed', async () => {
    const to = mention();
    const out = outbound();
    const [id] = await out.post(to, '• listed 3 files', 'status');
    expect(msg(id!).pings).toEqual([]);
    await out.edit(to, id!, '• listed 3 files\n• read notes.md');
    expect(msg(id!).history).toEqual(['• listed 3 files', '• listed 3 files\n• read notes.md']);
    await out.remove(to, id!);
    expect(msg(id!).deleted).toBe(true);
    await expect(out.remove(to, id!)).resolves.toBeUndefined(); // already gone: 404 is fine
  });

  it('a POST whose response was lost is sent again with the same nonce and makes one message', async () => {
    const to = mention();
    fake.fail({ method: 'POST', path: /^\/channels\/\d+\/messages$/, status: 500, afterWork: true });
    const ids = await outbound().post(to, 'exactly once', 'answer');
    const posts = fake.calls('POST', /^\/channels\/\d+\/messages$/);
    expect(posts.map((p) => p.status)).toEqual([500, 200]);
    expect(posts[0]!.body.nonce).toBe(posts[1]!.body.nonce);
    expect(
      fake
        .botMessages(fake.ids.general)
        .filter((m) => m.content === 'exactly once')
        .map((m) => m.id),
    ).toEqual(ids);
  });

  it('a channel piece an earlier worker started and never confirmed is sent again with its nonce: Discord returns the message it made', async () => {
    const to = mention();
    // The earlier attempt's POST reached Discord; its worker died before the answer came back.
    const first = await outbound().post(to, 'posted before the crash', 'answer');
    const ledger = memoryLedger();
    await ledger.started(0);
    const ids = await outbound().post(to, 'posted before the crash', 'answer', ledger);
    expect(ids).toEqual(first);
    expect(fake.botMessages(fake.ids.general).filter((m) => m.content === 'posted before the crash')).toHaveLength(1);
    expect(ledger.state(0)).toEqual({ posted: first[0] });
  });

  it('a follow-up of an interaction has no idempotency key: one whose outcome is unknown is sent again with the may-repeat note where it fits', async () => {
    const { to } = await deferredAsk();
    const ledger = memoryLedger();
    // The earlier attempt replaced the deferred response with piece 0 and had started piece 1 when it died.
    await ledger.posted(0, ORIGINAL);
    await ledger.started(1);
    const ids = await outbound().post(to, longAnswer(), 'answer', ledger);
    expect(ids).toHaveLength(3);
    expect(ledger.state(1)).toMatchObject({ posted: expect.any(String) });
    const followups = fake.calls('POST', /^\/webhooks\/\d+\/[^/]+$/);
    expect(followups).toHaveLength(2);
    // Piece 1 fills the 2,000 characters: no room for the note, so it is sent again as it is.
    expect(String(followups[0]!.body.content).length).toBeLessThanOrEqual(2_000);
    expect(String(followups[1]!.body.content)).toContain('That is all it does.');
    expect(fake.calls('PATCH', /@original$/)).toEqual([]);
  });

  it('honours a 429 on an edit: waits retry_after, then the edit lands once', async () => {
    const to = mention();
    const out = outbound();
    const [id] = await out.post(to, 'step 1', 'status');
    fake.fail({ method: 'PATCH', path: /^\/channels\/\d+\/messages\/\d+$/, status: 429, retryAfter: 0.25 });
    await out.edit(to, id!, 'step 2');
    const patches = fake.calls('PATCH', /^\/channels\/\d+\/messages\/\d+$/);
    expect(patches.map((p) => p.status)).toEqual([429, 200]);
    expect(patches[1]!.at - patches[0]!.at).toBeGreaterThanOrEqual(240);
    expect(msg(id!).history).toEqual(['step 1', 'step 2']);
  });

  it('shows typing in the channel', async () => {
    await outbound().typing(mention());
    expect(fake.calls('POST', /\/typing$/).map((r) => r.path)).toEqual([`/channels/${fake.ids.general}/typing`]);
  });
});

describe('DiscordOutbound: slash commands (the interaction webhook)', () => {
  it('progress edits the deferred response; the answer replaces it and overflows into ordered follow-ups', async () => {
    const { ix, to } = await deferredAsk();
    const out = outbound();
    expect(await out.post(to, '• looking', 'status')).toEqual([ORIGINAL]);
    await out.edit(to, ORIGINAL, '• looking\n• found it');
    const ids = await out.post(to, longAnswer(), 'answer');
    await out.remove(to, ORIGINAL); // the core removes the status message: it is the answer now, so nothing happens

    expect(ids[0]).toBe(ORIGINAL);
    expect(ids).toHaveLength(3);
    const original = msg(ix.originalId!);
    expect(original.deleted).toBe(false);
    expect(original.history.slice(0, 3)).toEqual(['', '• looking', '• looking\n• found it']);
    expect(original.content.startsWith('Here is the script.')).toBe(true);
    expect(ix.followups).toEqual(ids.slice(1));
    for (const p of [original, ...ix.followups.map(msg)]) {
      expect(p.content.length).toBeLessThanOrEqual(2000);
      expect((p.content.match(/^```/gm) ?? []).length % 2).toBe(0);
      expect(p.pings).toEqual([]);
    }
    expect(fake.calls('POST', /^\/channels\//)).toEqual([]);
    expect(fake.calls('POST', /^\/webhooks\//).every((r) => r.auth === undefined)).toBe(true);
  });

  it('a failure is an ephemeral line for the user who asked; the deferred response goes away', async () => {
    const { ix, to } = await deferredAsk();
    const ids = await outbound().post(to, 'Stopped.', 'notice');
    expect(ids).toEqual(ix.followups);
    expect(msg(ix.followups[0]!)).toMatchObject({ content: 'Stopped.', flags: 64 });
    expect(msg(ix.originalId!).deleted).toBe(true);
  });

  it("past the token's 15 minutes the answer is a channel message naming the user, with no webhook call", async () => {
    const { to } = await deferredAsk();
    fake.requests.length = 0;
    const out = outbound(() => Date.now() + SIXTEEN_MINUTES);
    const ids = await out.post(to, 'Late but here. @everyone', 'answer');
    expect(fake.calls('PATCH', /^\/webhooks\//)).toEqual([]);
    const posted = msg(ids[0]!);
    expect(posted).toMatchObject({ via: 'channel', channel_id: fake.ids.general, content: `<@${fake.ids.alice}>\nLate but here. @everyone` });
    expect(posted.message_reference).toBeUndefined();
    expect(posted.pings).toEqual([`user:${fake.ids.alice}`]);
    // Edits of the dead deferred response are skipped, not errors.
    await expect(out.edit(to, ORIGINAL, 'late progress')).resolves.toBeUndefined();
    expect(fake.calls('PATCH', /^\/webhooks\//)).toEqual([]);
  });

  it('a token the webhook refuses (401) mid-answer: the rest of the answer continues in the channel, in order', async () => {
    const { ix, to } = await deferredAsk();
    fake.fail({ method: 'POST', path: /^\/webhooks\/\d+\/[^/]+$/, status: 401, body: { message: 'Invalid Webhook Token', code: 50027 } });
    const out = outbound();
    const ids = await out.post(to, longAnswer(), 'answer');
    expect(ids[0]).toBe(ORIGINAL);
    expect(ids.slice(1).map((id) => msg(id).via)).toEqual(['channel', 'channel']);
    expect(msg(ix.originalId!).content.startsWith('Here is the script.')).toBe(true);
    const all = [msg(ix.originalId!).content, ...ids.slice(1).map((id) => msg(id).content)].join('\n');
    expect(all.indexOf('print("line 0")')).toBeLessThan(all.indexOf('print("line 59")'));
    expect(all.trimEnd().endsWith('That is all it does.')).toBe(true);
    // The refused interaction is not tried again.
    const before = fake.calls('PATCH', /^\/webhooks\//).length;
    await out.edit(to, ORIGINAL, 'more');
    expect(fake.calls('PATCH', /^\/webhooks\//)).toHaveLength(before);
  });

  it('no typing for a slash command (its deferred response shows "is thinking…")', async () => {
    const { to } = await deferredAsk();
    await outbound().typing(to);
    expect(fake.calls('POST', /\/typing$/)).toEqual([]);
  });

  it('ended(): an earlier slash command folded into the turn points at the answer below', async () => {
    const earlier = await deferredAsk('first');
    const last = await deferredAsk('second');
    await redis.set(interactionKey(prefix, earlier.to.id), JSON.stringify(interactionOf(earlier.to)), 'PX', 60_000);
    await redis.set(interactionKey(prefix, last.to.id), JSON.stringify(interactionOf(last.to)), 'PX', 60_000);
    const out = outbound();
    await out.post(last.to, 'Both answered.', 'answer');
    await out.ended(last.to, { runId: 'r1', state: 'completed', messageIds: [earlier.to.id, last.to.id] });
    expect(msg(earlier.ix.originalId!).content).toBe(FOLDED_NOTE);
    expect(msg(last.ix.originalId!).content).toBe('Both answered.');
  });

  it('ended(): when the folded turn did not complete, the earlier command says so', async () => {
    const earlier = await deferredAsk('first');
    const last = await deferredAsk('second');
    await redis.set(interactionKey(prefix, earlier.to.id), JSON.stringify(interactionOf(earlier.to)), 'PX', 60_000);
    await outbound().ended(last.to, {
      runId: 'r2',
      state: 'cancelled',
      reason: 'cancelled',
      line: honestLine('cancelled'),
      messageIds: [earlier.to.id, last.to.id],
    });
    expect(msg(earlier.ix.originalId!).content).toBe('↪ Handled together with the messages that came after this one. Stopped.');
    expect(foldedNote({ state: 'failed', line: honestLine('model_error') })).toContain('I could not get an answer from the model');
    expect(foldedNote({ state: 'failed' })).toBe('↪ Handled together with the messages that came after this one.');
  });
});

describe('DiscordOutbound.download', () => {
  it('fetches an attachment within the cap', async () => {
    const a = fake.addAttachment('notes.txt', Buffer.from('hello notes'));
    const bytes = await outbound().download({ name: 'notes.txt', ref: a.url, size: a.size }, 1_000, AbortSignal.timeout(5_000));
    expect(Buffer.from(bytes).toString()).toBe('hello notes');
  });

  it("refuses past the cap, and refuses hosts that are not Discord's", async () => {
    const a = fake.addAttachment('big.bin', Buffer.alloc(5_000, 1));
    await expect(outbound().download({ name: 'big.bin', ref: a.url }, 1_000, AbortSignal.timeout(5_000))).rejects.toThrow(/larger than the 1 kB limit/);
    await expect(outbound().download({ name: 'x', ref: 'http://example.com/x' }, 1_000, AbortSignal.timeout(5_000))).rejects.toThrow(
      /not a Discord attachment host/,
    );
  });
});

describe('DiscordOutbound.upload (send_file)', () => {
  // Discord's real (deprecated) rule is on: a follow-up right after a deferral would become the deferred response.
  let files: FakeDiscord;
  beforeAll(async () => {
    files = await startFakeDiscord({ followupEditsDeferred: true });
  });
  afterAll(async () => {
    await files?.close();
  });
  afterEach(() => {
    files.requests.length = 0;
  });

  const uploader = (now?: () => number) =>
    new DiscordOutbound({ rest: new DiscordRest({ token: files.token, apiUrl: files.apiUrl }), log, downloadHosts: [], ...(now && { now }) });
  const sent = (id: string) => files.messages.find((m) => m.id === id)!;
  const uploads = () => files.requests.filter((r) => r.files.length > 0);

  function fileOf(name: string, bytes: Buffer, caption?: string, mime = 'text/csv'): OutgoingFile {
    return {
      name,
      path: `out/${name}`,
      absolutePath: `/nowhere/out/${name}`,
      size: bytes.length,
      mime,
      ...(caption !== undefined && { caption }),
      read: async () => bytes,
    };
  }

  /** Alice mentions the bot in the thread (a session of its own, its own channel id). */
  function threadMention(): InboundMessage {
    const asked = files.userMessage({ channel: files.ids.thread, content: `<@${files.ids.app}> export it` });
    return {
      v: 1,
      id: `discord-${asked.id}`,
      platform: 'discord',
      conversation: files.ids.thread,
      sender: { id: files.ids.alice, name: 'Alice' },
      text: 'export it',
      attachments: [],
      eventId: asked.id,
      receivedAt: Date.now(),
      replyTo: asked.id,
    };
  }

  async function deferred(): Promise<{ ix: FakeInteraction; to: InboundMessage }> {
    const ix = files.slash({ name: 'ask', channel: files.ids.general, prompt: 'export it' });
    await new DiscordRest({ token: files.token, apiUrl: files.apiUrl }).request('POST', `/interactions/${ix.id}/${ix.token}/callback`, {
      auth: false,
      body: { type: 5, data: { flags: 0 } },
    });
    const to = normaliseCommand(
      {
        id: ix.id,
        token: ix.token,
        applicationId: files.ids.app,
        name: 'ask',
        prompt: 'export it',
        channelId: files.ids.general,
        guildId: files.ids.guild,
        user: { id: files.ids.alice, name: 'Alice' },
      },
      Date.now(),
    );
    return { ix, to };
  }

  it("takes up to 10 MiB, Discord's default per-file limit", () => {
    expect(uploader().uploadMaxBytes).toBe(10 * 1024 * 1024);
    expect(UPLOAD_MAX_BYTES).toBe(UPLOAD_LIMIT_BYTES);
  });

  it('a mention: the file arrives in the thread as a reply with its bytes, name and caption, pinging no one', async () => {
    const to = threadMention();
    const bytes = Buffer.from('day,total\nmon,3\n@everyone,4\n');
    const id = await uploader().upload(to, fileOf('report.csv', bytes, 'This week <@&1> @everyone'), AbortSignal.timeout(5_000));

    const m = sent(id);
    expect(m).toMatchObject({
      via: 'channel',
      channel_id: files.ids.thread,
      content: 'This week <@&1> @everyone',
      message_reference: { message_id: to.replyTo },
      pings: [],
    });
    expect(m.attachments.map((a) => [a.filename, a.size, a.content_type, a.bytes.toString()])).toEqual([
      ['report.csv', bytes.length, 'text/csv', bytes.toString()],
    ]);
    const [req] = uploads();
    expect(req!.path).toBe(`/channels/${files.ids.thread}/messages`);
    expect(req!.files.map((f) => [f.field, f.filename])).toEqual([['files[0]', 'report.csv']]);
    expect(req!.body).toMatchObject({
      attachments: [{ id: 0, filename: 'report.csv' }],
      allowed_mentions: { parse: [], replied_user: false },
      enforce_nonce: true,
      nonce: expect.stringMatching(/^[\w-]{1,25}$/),
    });
    const res = await fetch(m.attachments[0]!.url);
    expect(Buffer.from(await res.arrayBuffer()).toString()).toBe(bytes.toString());
  });

  it("the fake answers a multipart message POST with Discord's message object and its attachments", async () => {
    const rest = new DiscordRest({ token: files.token, apiUrl: files.apiUrl });
    const posted = await rest.request<any>('POST', `/channels/${files.ids.general}/messages`, {
      body: { attachments: [{ id: 0, filename: 'notes.md', description: 'the notes' }], allowed_mentions: { parse: [] } },
      files: [{ name: 'ignored-part-name.md', data: Buffer.from('# notes\n'), contentType: 'text/markdown' }],
    });
    expect(posted).toMatchObject({ channel_id: files.ids.general, content: '', author: { id: files.ids.app } });
    expect(posted.attachments).toEqual([
      {
        id: expect.stringMatching(/^\d+$/),
        filename: 'notes.md',
        description: 'the notes',
        size: 8,
        url: expect.stringContaining('/attachments/'),
        proxy_url: expect.stringContaining('/attachments/'),
        content_type: 'text/markdown',
      },
    ]);
    const empty = await rest.request('POST', `/channels/${files.ids.general}/messages`, { body: { content: ' ' }, files: [] }).catch((e: unknown) => e);
    expect(empty).toMatchObject({ status: 400, code: 50006 });
  });

  it('a 429 is waited out and the file arrives once; a lost response is resent with its nonce and makes one message', async () => {
    const to = threadMention();
    files.fail({ method: 'POST', path: /^\/channels\/\d+\/messages$/, status: 429, retryAfter: 0.2 });
    const id = await uploader().upload(to, fileOf('a.txt', Buffer.from('alpha')), AbortSignal.timeout(5_000));
    expect(uploads().map((r) => r.status)).toEqual([429, 200]);
    expect(uploads()[1]!.at - uploads()[0]!.at).toBeGreaterThanOrEqual(190);
    expect(
      files
        .botMessages(files.ids.thread)
        .filter((m) => m.attachments.some((a) => a.filename === 'a.txt'))
        .map((m) => m.id),
    ).toEqual([id]);

    files.requests.length = 0;
    files.fail({ method: 'POST', path: /^\/channels\/\d+\/messages$/, status: 502, afterWork: true });
    const again = await uploader().upload(to, fileOf('b.txt', Buffer.from('bravo')), AbortSignal.timeout(10_000));
    expect(uploads().map((r) => r.status)).toEqual([502, 200]);
    expect(uploads()[1]!.body.nonce).toBe(uploads()[0]!.body.nonce);
    expect(
      files
        .botMessages(files.ids.thread)
        .filter((m) => m.attachments.some((a) => a.filename === 'b.txt'))
        .map((m) => m.id),
    ).toEqual([again]);
  });

  it('a refusal is thrown and classified as refused: missing Attach Files (403 50013), a file over the limit (413 40005)', async () => {
    const to = threadMention();
    const out = uploader();
    files.fail({ method: 'POST', path: /^\/channels\/\d+\/messages$/, status: 403, body: { message: 'Missing Permissions', code: 50013 } });
    const denied = await out.upload(to, fileOf('c.txt', Buffer.from('charlie')), AbortSignal.timeout(5_000)).catch((e: unknown) => e);
    expect(denied).toMatchObject({ status: 403, code: 50013 });
    expect(out.classifyWriteError(denied)).toBe('refused');

    const big = await out
      .upload(to, fileOf('big.bin', Buffer.alloc(UPLOAD_LIMIT_BYTES + 1, 7), undefined, 'application/octet-stream'), AbortSignal.timeout(20_000))
      .catch((e: unknown) => e);
    expect(big).toMatchObject({ status: 413, code: 40005, message: expect.stringContaining('Request entity too large') });
    expect(out.classifyWriteError(big)).toBe('refused');
    expect(uploads().map((r) => r.status)).toEqual([403, 413]);
    expect(files.botMessages(files.ids.thread).filter((m) => m.attachments.some((a) => ['c.txt', 'big.bin'].includes(a.filename)))).toEqual([]);
  });

  it('a slash command: the still-thinking response gets a progress line first, then the file is a follow-up of its own', async () => {
    const { ix, to } = await deferred();
    files.requests.length = 0;
    const id = await uploader().upload(to, fileOf('report.csv', Buffer.from('x,y\n1,2\n'), 'Here it is'), AbortSignal.timeout(5_000));

    expect(ix.followups).toEqual([id]);
    expect(sent(id)).toMatchObject({ via: 'followup', content: 'Here it is', pings: [], flags: 0 });
    expect(sent(id).attachments.map((a) => a.bytes.toString())).toEqual(['x,y\n1,2\n']);
    expect(sent(ix.originalId!)).toMatchObject({ content: '• sending report.csv', attachments: [] });
    expect(files.requests.map((r) => `${r.method} ${r.path.replace(ix.token, ':token')}`)).toEqual([
      `GET /webhooks/${files.ids.app}/:token/messages/@original`,
      `PATCH /webhooks/${files.ids.app}/:token/messages/@original`,
      `POST /webhooks/${files.ids.app}/:token`,
    ]);
    expect(files.requests.every((r) => r.auth === undefined)).toBe(true);

    // Once the response shows progress, a second file goes straight to a follow-up.
    files.requests.length = 0;
    const second = await uploader().upload(to, fileOf('more.csv', Buffer.from('z\n')), AbortSignal.timeout(5_000));
    expect(ix.followups).toEqual([id, second]);
    expect(files.calls('PATCH', /@original$/)).toEqual([]);
    expect(sent(second).content).toBe('');
  });

  it("why: the fake keeps Discord's rule that a follow-up right after the deferral becomes the deferred response", async () => {
    const { ix } = await deferred();
    const rest = new DiscordRest({ token: files.token, apiUrl: files.apiUrl });
    const posted = await rest.request<{ id: string }>('POST', `/webhooks/${files.ids.app}/${ix.token}`, {
      auth: false,
      body: { content: 'caption', attachments: [{ id: 0, filename: 'f.txt' }] },
      files: [{ name: 'f.txt', data: Buffer.from('f'), contentType: 'text/plain' }],
    });
    expect(posted.id).toBe(ix.originalId);
    expect(ix.followups).toEqual([]);
    expect(sent(ix.originalId!).attachments.map((a) => a.filename)).toEqual(['f.txt']);
  });

  it("a slash command past its 15 minutes, or whose token is refused: the file goes to the command's channel", async () => {
    const late = await deferred();
    const lateId = await uploader(() => Date.now() + SIXTEEN_MINUTES).upload(late.to, fileOf('late.txt', Buffer.from('late')), AbortSignal.timeout(5_000));
    expect(sent(lateId)).toMatchObject({ via: 'channel', channel_id: files.ids.general, pings: [] });
    expect(sent(lateId).message_reference).toBeUndefined();
    expect(files.calls('GET', /^\/webhooks\//)).toEqual([]);

    const refused = await deferred();
    files.expire(refused.ix.id);
    const refusedId = await uploader().upload(refused.to, fileOf('gone.txt', Buffer.from('gone')), AbortSignal.timeout(5_000));
    expect(sent(refusedId)).toMatchObject({ via: 'channel', channel_id: files.ids.general });
    expect(sent(refusedId).attachments.map((a) => a.filename)).toEqual(['gone.txt']);
    expect(refused.ix.followups).toEqual([]);
  });

  it("a cancelled run's upload stops: the abort is thrown as it is, nothing is sent", async () => {
    const controller = new AbortController();
    controller.abort(new Error('run cancelled'));
    await expect(uploader().upload(threadMention(), fileOf('d.txt', Buffer.from('delta')), controller.signal)).rejects.toThrow('run cancelled');
    expect(uploads()).toEqual([]);
  });
});
