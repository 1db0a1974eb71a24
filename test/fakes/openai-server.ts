import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { text as readBody } from 'node:stream/consumers';
import type { AddressInfo } from 'node:net';

/**
 * An in-process OpenAI-compatible server on 127.0.0.1 for driving the real `openai` client.
 * Scripted steps are consumed one per POST /v1/chat/completions; when the script is empty the
 * handler answers; with neither, the request is answered 500 and recorded as unexpected.
 */

export interface ReplyStep {
  content?: string | null;
  /** A missing id gets a generated one; '' sends the call with no id (like some compatible servers). */
  toolCalls?: { id?: string; name: string; arguments: string }[];
  /** Defaults to 'tool_calls' when toolCalls are given, else 'stop'. */
  finishReason?: string;
  /** Wait before answering (headers included). */
  delayMs?: number;
  /** Streamed requests: the content in this many chunks (default up to 3)… */
  chunks?: number;
  /** …with this long between two chunks (default none). */
  chunkDelayMs?: number;
  /** Streamed requests: the stream breaks (the connection is destroyed) after this many content chunks. */
  breakAfterChunks?: number;
  /** null: send no usage at all (like some compatible servers). Default: a chars/4 estimate. */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens?: number } | null;
}

export interface ErrorStep {
  status: number;
  /** Sent as the `retry-after` header. */
  retryAfter?: string;
  /** Default: OpenAI's error shape `{ error: { message, type, param, code } }`. */
  body?: unknown;
  delayMs?: number;
}

export type Step = ReplyStep | ErrorStep;

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body (undefined for GET). */
  body: any;
  /** Date.now() when the request arrived. */
  at: number;
  /** No scripted step and no handler were there for it. */
  unexpected?: boolean;
}

export interface FakeOpenAI {
  /** http://127.0.0.1:PORT/v1 */
  baseURL: string;
  /** Chat completion requests, in arrival order. */
  requests: RecordedRequest[];
  /** Every POST /v1/embeddings: the model and the inputs (kept apart from the chat requests). */
  embeddingRequests: { model: string; input: string[] }[];
  script(steps: Step[]): void;
  setHandler(fn: (req: RecordedRequest) => Step | Promise<Step>): void;
  assertDone(): void;
  close(): Promise<void>;
}

export interface FakeOpenAIOptions {
  /** When set, a request without `Authorization: Bearer <apiKey>` is answered 401 as OpenAI does (default: any key). */
  apiKey?: string;
  /** The model ids GET /v1/models lists (default: fake-model). */
  models?: string[];
  /** POST /v1/embeddings: each input's vector (default: a hashed bag of its words, 64 dimensions). */
  embed?: (text: string) => number[];
}

/** A text's words hashed into 64 buckets: texts sharing words point the same way. */
export function bagOfWords(text: string): number[] {
  const v = new Array<number>(64).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 0;
    for (const ch of word) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
    v[h % 64]! += 1;
  }
  return v;
}

export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const queue: Step[] = [];
  const requests: RecordedRequest[] = [];
  const embeddingRequests: { model: string; input: string[] }[] = [];
  let handler: ((req: RecordedRequest) => Step | Promise<Step>) | undefined;

  const server = createServer((req, res) => {
    void serve(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, `fake-openai crashed: ${String(err)}`);
      else res.destroy();
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendJson(res, 401, {
        error: {
          message: 'Incorrect API key provided: sk-w****. You can find your API key at https://platform.openai.com/account/api-keys.',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      });
    }
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: (options.models ?? ['fake-model']).map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'switchboard-tests' })),
      });
    }
    if (req.method === 'POST' && path === '/v1/embeddings') {
      const body = JSON.parse(await readBody(req)) as { model: string; input: string | string[] };
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      embeddingRequests.push({ model: body.model, input: inputs });
      const embed = options.embed ?? bagOfWords;
      return sendJson(res, 200, {
        object: 'list',
        model: body.model,
        data: inputs.map((text, index) => ({ object: 'embedding', index, embedding: embed(text) })),
        usage: { prompt_tokens: inputs.join(' ').split(/\s+/).length, total_tokens: inputs.join(' ').split(/\s+/).length },
      });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      return sendError(res, 404, `fake-openai: no route ${req.method} ${path}`, 'invalid_request_error');
    }
    const raw = await readBody(req);
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      return sendError(res, 400, 'fake-openai: body is not JSON', 'invalid_request_error');
    }
    const recorded: RecordedRequest = { method: req.method, path, headers: req.headers, body, at: Date.now() };
    requests.push(recorded);
    const step = queue.length > 0 ? queue.shift() : handler ? await handler(recorded) : undefined;
    if (step === undefined) {
      recorded.unexpected = true;
      return sendError(res, 500, `fake-openai: unexpected request #${requests.length} (no scripted step, no handler)`);
    }
    if (step.delayMs) {
      const closed = await waitOrClose(res, step.delayMs);
      if (closed) return;
    }
    if ('status' in step) {
      const headers: Record<string, string> = step.retryAfter !== undefined ? { 'retry-after': step.retryAfter } : {};
      const errBody = step.body ?? { error: { message: `scripted ${step.status}`, type: errorType(step.status), param: null, code: null } };
      return sendJson(res, step.status, errBody, headers);
    }
    if (body.stream === true) return sendStream(res, body, step);
    return sendJson(res, 200, completion(body, step));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    embeddingRequests,
    script(steps) {
      queue.push(...steps);
    },
    setHandler(fn) {
      handler = fn;
    },
    assertDone() {
      const unexpected = requests.filter((r) => r.unexpected).length;
      if (queue.length > 0 || unexpected > 0) {
        throw new Error(`fake-openai: ${queue.length} scripted step(s) unused, ${unexpected} unexpected request(s)`);
      }
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

let seq = 0;

function completion(body: any, step: ReplyStep) {
  const toolCalls = wireToolCalls(step);
  return {
    id: `chatcmpl-fake${++seq}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model ?? 'fake-model',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: step.content === undefined ? (toolCalls.length > 0 ? null : '') : step.content,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason(step),
      },
    ],
    ...(step.usage === null ? {} : { usage: usage(body, step) }),
  };
}

async function sendStream(res: ServerResponse, body: any, step: ReplyStep): Promise<void> {
  const id = `chatcmpl-fake${++seq}`;
  const created = Math.floor(Date.now() / 1000);
  const includeUsage = body.stream_options?.include_usage === true && step.usage !== null;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created,
      model: body.model ?? 'fake-model',
      system_fingerprint: null,
      choices,
      ...(includeUsage ? { usage: null } : {}),
      ...extra,
    })}\n\n`;
  const delta = (d: unknown, finish: string | null = null) => [{ index: 0, delta: d, logprobs: null, finish_reason: finish }];

  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.write(chunk(delta({ role: 'assistant', content: '', refusal: null })));
  let sent = 0;
  for (const piece of pieces(step.content ?? '', step.chunks)) {
    if (step.breakAfterChunks !== undefined && sent >= step.breakAfterChunks) {
      res.destroy();
      return;
    }
    if (step.chunkDelayMs && sent > 0) await new Promise((r) => setTimeout(r, step.chunkDelayMs));
    if (res.destroyed) return;
    res.write(chunk(delta({ content: piece })));
    sent++;
  }
  wireToolCalls(step).forEach((call, index) => {
    const head = { index, ...(call.id ? { id: call.id } : {}), type: 'function', function: { name: call.function.name, arguments: '' } };
    res.write(chunk(delta({ tool_calls: [head] })));
    for (const piece of pieces(call.function.arguments)) {
      res.write(chunk(delta({ tool_calls: [{ index, function: { arguments: piece } }] })));
    }
  });
  res.write(chunk(delta({}, finishReason(step))));
  if (includeUsage) res.write(chunk([], { usage: usage(body, step) }));
  res.end('data: [DONE]\n\n');
}

function wireToolCalls(step: ReplyStep) {
  return (step.toolCalls ?? []).map((c, i) => ({
    ...(c.id === '' ? {} : { id: c.id ?? `call_fake${seq}_${i}` }),
    type: 'function' as const,
    function: { name: c.name, arguments: c.arguments },
  }));
}

function finishReason(step: ReplyStep): string {
  return step.finishReason ?? ((step.toolCalls?.length ?? 0) > 0 ? 'tool_calls' : 'stop');
}

function usage(body: any, step: ReplyStep) {
  if (step.usage) return { total_tokens: step.usage.prompt_tokens + step.usage.completion_tokens, ...step.usage };
  const prompt = Math.ceil(JSON.stringify(body.messages ?? []).length / 4);
  const completionText = (step.content ?? '') + (step.toolCalls ?? []).map((c) => c.name + c.arguments).join('');
  const completionTokens = Math.ceil(completionText.length / 4);
  return { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens };
}

/** Splits text into up to `n` (3) pieces, the way a real stream trickles it out. */
function pieces(text: string, n = 3): string[] {
  if (text === '') return [];
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function errorType(status: number): string {
  if (status === 401) return 'invalid_api_key';
  if (status === 429) return 'rate_limit_exceeded';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string, type = 'server_error'): void {
  sendJson(res, status, { error: { message, type, param: null, code: null } });
}

/** Resolves true if the client went away first (an aborted or timed-out call). */
function waitOrClose(res: ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(false);
    }, ms);
    const onClose = () => {
      clearTimeout(timer);
      resolve(true);
    };
    res.once('close', onClose);
  });
}
