/** What a doctor request got: the status, headers and parsed JSON body (undefined when not JSON), or why nothing came. */
export type HttpAnswer = { status: number; headers: Headers; body: any } | { error: string };

/** One request with a deadline; never throws. */
export async function request(url: string, init: RequestInit & { timeoutMs: number }): Promise<HttpAnswer> {
  const { timeoutMs, ...rest } = init;
  try {
    const res = await fetch(url, { ...rest, signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: res.status, headers: res.headers, body };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e.name === 'TimeoutError') return { error: `no answer within ${timeoutMs / 1000} s` };
    return { error: e.cause?.code ?? e.cause?.message ?? e.message };
  }
}

/** The origin of a URL, for saying where a request went without its path (which may hold a token). */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
