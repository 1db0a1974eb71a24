import { request } from 'node:http';

export interface RawResponse {
  status: number;
  body: string;
}

/**
 * One HTTP request with exactly these bytes and headers (fetch would fix some of them up), from
 * a loopback source address of the caller's choice: the admin guard rate-limits failed
 * credentials per client address, and a fuzzer sends many.
 */
export function rawRequest(
  baseUrl: string,
  o: { method: string; path: string; headers?: Record<string, string>; body?: Buffer; from?: string; timeoutMs?: number },
): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: o.method,
        path: o.path,
        headers: { ...o.headers, ...(o.body && { 'content-length': String(o.body.length) }) },
        ...(o.from && { localAddress: o.from }),
        timeout: o.timeoutMs ?? 20_000,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${o.timeoutMs ?? 20_000} ms`)));
    req.on('error', reject);
    req.end(o.body);
  });
}
