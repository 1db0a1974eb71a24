import { request } from 'node:http';

/** Shared by the admin security tests: the token, its credentials, and one exact HTTP request. */
export const TOKEN = 'security-admin-token-8d2f';
export const bearer = { authorization: `Bearer ${TOKEN}` };
export const basic = { authorization: `Basic ${Buffer.from(`ops:${TOKEN}`).toString('base64')}` };
export const wrongBearer = { authorization: 'Bearer not-the-admin-token' };

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * One request with exactly these headers (fetch adds its own, e.g. Sec-Fetch-Mode) from a
 * loopback source address of the caller's choice: failures are counted per client address.
 */
export function send(baseUrl: string, method: string, path: string, headers: Record<string, string> = {}, from?: string): Promise<Answer> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers, agent: false, ...(from && { localAddress: from }) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Logs in with the form as a browser on this site would, and returns the Set-Cookie line. */
export async function login(baseUrl: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${baseUrl}/admin/login`, { method: 'POST', body: new URLSearchParams({ token: TOKEN }), headers, redirect: 'manual' });
  if (res.status !== 303) throw new Error(`login answered ${res.status}: ${await res.text()}`);
  return res.headers.get('set-cookie')!;
}
