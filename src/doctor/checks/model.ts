import type { ModelConfig } from '../../config/config.js';
import { originOf, request } from '../http.js';
import { fail, ok, skip, type CheckResult } from '../types.js';

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** Edit distance, for naming the served models closest to a wrong AGENT_MODEL. */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const here = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = here;
    }
  }
  return row[b.length]!;
}

/** Up to `n` of `ids` closest to `name` (case-insensitive; an id containing the name counts as closest). */
export function closeNames(name: string, ids: readonly string[], n = 3): string[] {
  const want = name.toLowerCase();
  const score = (id: string) => {
    const have = id.toLowerCase();
    return have.includes(want) ? 0 : editDistance(want, have);
  };
  return [...ids].sort((a, b) => score(a) - score(b) || a.localeCompare(b)).slice(0, n);
}

function headers(model: ModelConfig): Record<string, string> {
  return { accept: 'application/json', ...(model.apiKey && { authorization: `Bearer ${model.apiKey}` }) };
}

function errorText(body: any): string {
  const message = body?.error?.message ?? body?.message ?? body?.error;
  return typeof message === 'string' ? message.slice(0, 160) : '';
}

/** GET {base}/models with the key: the key is accepted and AGENT_MODEL is served. */
export async function checkModel(model: ModelConfig, timeoutMs: number): Promise<CheckResult[]> {
  const name = 'model endpoint';
  if (!model.apiKey && !model.baseURL) {
    return [
      fail(
        name,
        'neither OPENAI_API_KEY nor OPENAI_BASE_URL is set',
        'set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server (Ollama: http://127.0.0.1:11434/v1)',
      ),
    ];
  }
  const base = (model.baseURL ?? OPENAI_BASE_URL).replace(/\/+$/, '');
  const answer = await request(`${base}/models`, { headers: headers(model), timeoutMs });
  if ('error' in answer) return [fail(name, `${base} does not answer (${answer.error})`, 'check OPENAI_BASE_URL and that the model server is running')];
  if (answer.status === 401 || answer.status === 403) {
    return [
      fail(
        name,
        `${base} refused the key (${answer.status}${errorText(answer.body) ? `: ${errorText(answer.body)}` : ''})`,
        'set OPENAI_API_KEY to a valid key for this endpoint',
      ),
    ];
  }
  if (answer.status === 404 || answer.status === 405)
    return [ok(name, `${base} answers (no model list offered: ${answer.status}); AGENT_MODEL ${model.name} not checked`)];
  if (answer.status >= 400)
    return [
      fail(
        name,
        `${base}/models answered ${answer.status}${errorText(answer.body) ? `: ${errorText(answer.body)}` : ''}`,
        'check OPENAI_BASE_URL (an OpenAI-compatible /v1 base) and the server',
      ),
    ];
  const ids: unknown = Array.isArray(answer.body?.data) ? answer.body.data.map((m: any) => m?.id).filter((id: unknown) => typeof id === 'string') : undefined;
  if (!Array.isArray(ids) || ids.length === 0) return [ok(name, `${base} answers (no model list offered); AGENT_MODEL ${model.name} not checked`)];
  if (!ids.includes(model.name)) {
    return [
      fail(
        name,
        `AGENT_MODEL ${model.name} is not among the ${ids.length} models ${originOf(base)} serves`,
        `set AGENT_MODEL to a served model, e.g. ${closeNames(model.name, ids as string[]).join(', ')}`,
      ),
    ];
  }
  return [ok(name, `${base} accepts the key and serves ${model.name}`)];
}

const PROBE_TOOL = {
  type: 'function',
  function: {
    name: 'report_ready',
    description: 'Report that you are ready. Always call this tool.',
    parameters: { type: 'object', properties: { ready: { type: 'boolean' } }, required: ['ready'], additionalProperties: false },
  },
};

/** One tiny chat completion with one tool and tool_choice required: the model can call tools. */
export async function probeModelTools(model: ModelConfig, timeoutMs: number): Promise<CheckResult> {
  const name = 'model tool calling';
  const base = (model.baseURL ?? OPENAI_BASE_URL).replace(/\/+$/, '');
  const answer = await request(`${base}/chat/completions`, {
    method: 'POST',
    headers: { ...headers(model), 'content-type': 'application/json' },
    body: JSON.stringify({
      model: model.name,
      messages: [{ role: 'user', content: 'Call the report_ready tool with ready=true.' }],
      tools: [PROBE_TOOL],
      tool_choice: 'required',
    }),
    timeoutMs,
  });
  if ('error' in answer) return fail(name, `no answer from ${base}/chat/completions (${answer.error})`, 'check the model server (MODEL_TIMEOUT_MS, its load)');
  if (answer.status === 400) {
    return fail(
      name,
      `${model.name} refused a request with tools (400${errorText(answer.body) ? `: ${errorText(answer.body)}` : ''})`,
      'use a model with tool calling (vLLM: start it with tool calling enabled; Ollama: a model with tool support)',
    );
  }
  if (answer.status >= 400)
    return fail(
      name,
      `chat completion answered ${answer.status}${errorText(answer.body) ? `: ${errorText(answer.body)}` : ''}`,
      'check OPENAI_API_KEY, AGENT_MODEL and the server',
    );
  const calls = answer.body?.choices?.[0]?.message?.tool_calls;
  if (Array.isArray(calls) && calls.length > 0) return ok(name, `${model.name} called ${calls[0]?.function?.name ?? 'a tool'} when required`);
  return fail(
    name,
    `${model.name} answered without a tool call although tool_choice was required`,
    'use a model (or server setting) with tool calling; the agent cannot use its workspace tools without it',
  );
}

export function skipProbe(): CheckResult {
  return skip('model tool calling', 'not probed (npm run doctor -- --probe sends one tiny chat completion)');
}
