import fc from 'fast-check';

/**
 * Bodies for the HTTP fuzz test: random and broken JSON, and the payload shapes the gateway
 * knows (Slack events, interactions and commands, Telegram updates, admin bodies) with a field
 * the edge reads given the wrong type. Every shape here must be refused or skipped, never queued:
 * a mutation always breaks a field the edge's schema checks.
 */

export interface Body {
  kind: string;
  contentType: string | undefined;
  bytes: Buffer;
}

// Keys a real payload never has, so a generated object never happens to be a well-formed one.
const junkObject = fc.dictionary(
  fc.string({ maxLength: 5 }).map((k) => `_${k}`),
  fc.jsonValue({ maxDepth: 1 }),
  { maxKeys: 3 },
);
const junkList = fc.array(fc.oneof(fc.jsonValue({ maxDepth: 1 }), junkObject), { maxLength: 3 });

/** Anything but a string (never undefined: a missing optional field is valid). */
const notString = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), junkList, junkObject);
/** Anything but a number. */
const notNumber = fc.oneof(fc.string({ maxLength: 8 }), fc.boolean(), fc.constant(null), junkList, junkObject);
/** Anything but an object (for a field that holds one) or a list (for one that holds a list of objects). */
const notObject = fc.oneof(
  fc.integer(),
  fc.string({ maxLength: 8 }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.integer(), fc.string(), fc.constant(null)), { minLength: 1, maxLength: 3 }),
);

/** Strings that strain a decoder: lone surrogates, NUL, RTL marks, emoji, long runs. */
export const nastyString = fc.oneof(
  fc.constantFrom(
    '\ud800',
    '\udfff',
    'a\ud83d',
    '\u0000',
    '\u202e',
    '\ufeff',
    '%00',
    '%E0%A4%A',
    '😀'.repeat(50),
    '<script>',
    '${x}',
    '../../etc/passwd',
    '\\u0000',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
);

const hugeString = fc.integer({ min: 100_000, max: 1_500_000 }).map((n) => 'x'.repeat(n));

const mention = (text: unknown) => ({ type: 'app_mention', user: 'U0FUZZ', text, ts: '1700000000.000100', channel: 'C0FUZZ', client_msg_id: 'm-1' });

/** A Slack event_callback whose event has one checked field broken (a required one removed, or any given the wrong type). */
const slackEvent = fc
  .tuple(
    fc.constantFrom('app_mention', 'message'),
    fc.constantFrom('channel', 'ts', 'text', 'user', 'thread_ts', 'files', 'subtype', 'channel_type', 'bot_id'),
    fc.oneof(notString, fc.constant('<delete>')),
    notObject,
    fc.string({ maxLength: 30 }),
    fc.nat(),
  )
  .filter(([, field, value]) => value !== '<delete>' || field === 'channel' || field === 'ts')
  .map(([type, field, value, notFiles, text, n]) => {
    const event: Record<string, unknown> = { ...mention(text), type, event_ts: '1700000000.000100' };
    if (value === '<delete>') delete event[field];
    else event[field] = field === 'files' ? notFiles : value;
    return {
      token: 'legacy',
      team_id: 'T0FAKE',
      api_app_id: 'A0FAKE',
      type: 'event_callback',
      event_id: `EvFUZZ${n}`,
      event_time: 1,
      authorizations: [{ user_id: 'U0BOT', team_id: 'T0FAKE' }],
      event,
    };
  });

/** Envelopes and interactions of kinds the gateway does not act on, with random contents. */
const slackOther = fc.record({
  type: fc.constantFrom(
    'event_callback',
    'url_verification',
    'view_submission',
    'shortcut',
    'message_action',
    'block_actions',
    'block_suggestion',
    'view_closed',
    'app_rate_limited',
    'nope',
  ),
  event: fc.option(
    fc.record({ type: fc.constantFrom('reaction_added', 'app_home_opened', 'member_joined_channel', 'tokens_revoked'), user: fc.jsonValue({ maxDepth: 1 }) }),
    { nil: undefined },
  ),
  challenge: fc.option(fc.jsonValue({ maxDepth: 1 }), { nil: undefined }),
  actions: fc.option(
    fc.array(fc.record({ action_id: fc.constantFrom('sb_approve', 'sb_deny', 'other'), value: fc.jsonValue({ maxDepth: 1 }), type: fc.constant('button') }), {
      maxLength: 2,
    }),
    { nil: undefined },
  ),
  user: fc.option(fc.jsonValue({ maxDepth: 1 }), { nil: undefined }),
  view: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
});

/** A slash command form that cannot be queued: /ask with no channel or no user, or a command we do not have. */
const slackCommand = fc
  .record({
    command: fc.constantFrom('/ask', '/ask', '/other', ''),
    text: fc.oneof(fc.string({ maxLength: 30 }), nastyString),
    channel_id: fc.constantFrom('', 'C0FUZZ'),
    user_id: fc.constantFrom('', 'U0FUZZ'),
    dropText: fc.boolean(),
  })
  .filter((c) => c.command !== '/ask' || c.channel_id === '' || c.user_id === '')
  .map(({ dropText, ...c }) => {
    const fields: Record<string, string> = { token: 'legacy', team_id: 'T0FAKE', trigger_id: '1.2.3', response_url: 'http://127.0.0.1:9/x', ...c };
    if (dropText) delete fields.text;
    for (const k of ['channel_id', 'user_id'] as const) if (fields[k] === '') delete fields[k];
    return fields;
  });

/** A Telegram update whose message has one checked field broken. */
const telegramUpdate = fc
  .tuple(
    fc.integer({ min: 1, max: 2 ** 31 }),
    fc.constantFrom('message_id', 'chat', 'chat.id', 'text', 'entities', 'from', 'from.id', 'reply_to_message', 'photo', 'document'),
    fc.record({ notString, notNumber, notObject }),
    fc.oneof(fc.string({ maxLength: 30 }), nastyString),
  )
  .map(([updateId, field, wrong, text]) => {
    const value = ['message_id', 'chat.id', 'from.id'].includes(field) ? wrong.notNumber : field === 'text' ? wrong.notString : wrong.notObject;
    const message: Record<string, unknown> = {
      message_id: 7,
      date: 1_700_000_000,
      chat: { id: 990_001, type: 'private' },
      from: { id: 990_001, is_bot: false, first_name: 'Fuzz' },
      text,
    };
    const [head, sub] = field.split('.') as [string, string | undefined];
    if (sub) message[head] = { ...(message[head] as object), [sub]: value };
    else message[head] = value;
    return { update_id: updateId, message };
  });

const telegramOther = fc.record({
  update_id: fc.oneof(fc.integer(), notNumber),
  callback_query: fc.option(
    fc.record({ id: fc.jsonValue({ maxDepth: 1 }), data: fc.oneof(fc.string({ maxLength: 64 }), notString), from: fc.jsonValue({ maxDepth: 1 }) }),
    { nil: undefined },
  ),
  edited_message: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
});

const adminBody = fc.record(
  {
    token: fc.oneof(nastyString, notString),
    force: fc.oneof(fc.boolean(), nastyString),
    concurrency: fc.oneof(fc.integer(), nastyString),
    jobData: fc.jsonValue({ maxDepth: 2 }),
    runAt: fc.oneof(fc.double(), nastyString),
  },
  { requiredKeys: [] },
);

const json = (kind: string, value: fc.Arbitrary<unknown>): fc.Arbitrary<Body> =>
  fc
    .tuple(value, fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', undefined))
    .map(([v, contentType]) => ({ kind, contentType, bytes: Buffer.from(JSON.stringify(v) ?? 'undefined') }));

const form = (kind: string, fields: fc.Arbitrary<Record<string, string>>): fc.Arbitrary<Body> =>
  fields.map((f) => ({ kind, contentType: 'application/x-www-form-urlencoded', bytes: Buffer.from(new URLSearchParams(f).toString()) }));

/** JSON cut anywhere: inside a string, an escape, a number. */
const truncated = fc
  .tuple(
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? ''),
    fc.double({ min: 0, max: 1, noNaN: true }),
  )
  .map(([text, at]) => text.slice(0, Math.floor(text.length * at)));

const rawBytes = fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b));

/** Bodies for any endpoint, `shapes` being that endpoint's known payloads (already broken). */
export function bodies(shapes: fc.Arbitrary<Body>[]): fc.Arbitrary<Body> {
  return fc.oneof(
    ...shapes.map((arbitrary) => ({ weight: 4, arbitrary })),
    { weight: 2, arbitrary: json('random json', fc.jsonValue({ maxDepth: 4 })) },
    { weight: 1, arbitrary: json('null / array / scalar', fc.constantFrom(null, [], [1, 2], 0, '', 'str', true, {})) },
    { weight: 1, arbitrary: json('lone surrogates', fc.dictionary(nastyString, nastyString, { maxKeys: 4 })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(truncated, fc.constantFrom('application/json', 'application/x-www-form-urlencoded'))
        .map(([t, ct]) => ({ kind: 'truncated json', contentType: ct, bytes: Buffer.from(t) })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          rawBytes,
          fc.constantFrom(
            'application/json',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
            'application/xml',
            'application/json; charset=utf-16',
            undefined,
          ),
        )
        .map(([b, ct]) => ({ kind: 'raw bytes', contentType: ct, bytes: b })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(hugeString, fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain')).map(([s, ct]) => ({
        kind: 'huge string',
        contentType: ct,
        bytes: Buffer.from(ct === 'application/json' ? JSON.stringify({ text: s }) : `payload=${s}`),
      })),
    },
    { weight: 1, arbitrary: fc.constant<Body>({ kind: 'empty', contentType: 'application/json', bytes: Buffer.alloc(0) }) },
  );
}

export const slackBodies = bodies([
  json('slack event, wrong types', slackEvent),
  json('slack other envelope', slackOther),
  form(
    'slack interaction',
    slackOther.map((p) => ({ payload: JSON.stringify(p) })),
  ),
  form(
    'slack interaction, broken payload',
    truncated.map((t) => ({ payload: t })),
  ),
  form('slack command', slackCommand),
]);
export const telegramBodies = bodies([json('telegram update, wrong types', telegramUpdate), json('telegram other update', telegramOther)]);
export const adminBodies = bodies([json('admin body', adminBody), form('admin form', fc.dictionary(fc.string({ maxLength: 8 }), nastyString, { maxKeys: 3 }))]);
