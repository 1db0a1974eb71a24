import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_COOKIE, adminCookieValue } from '../../src/http/auth.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { login, send, TOKEN } from './admin-http.js';

const HOUR = 3600 * 1000;
const attributes = (setCookie: string) =>
  setCookie
    .split(';')
    .slice(1)
    .map((a) => a.trim().toLowerCase());

/**
 * The login cookie is a session of 12 hours: its value carries its expiry under a MAC of the
 * token, so a copied cookie stops working and cannot be extended; it is never readable by
 * scripts, never sent cross-site, and only over TLS when the site is served over TLS.
 */
describe('the admin login cookie', () => {
  let stack: Stack;
  beforeAll(async () => (stack = await startStack('sec-cookie', { ADMIN_TOKEN: TOKEN, TRUST_PROXY: 'loopback' })));
  afterAll(async () => stack?.close());

  it('is HttpOnly, SameSite=Strict, Path=/, Max-Age 12 h; Secure behind TLS (X-Forwarded-Proto from a trusted proxy)', async () => {
    const plain = await login(stack.baseUrl);
    expect(plain.startsWith(`${ADMIN_COOKIE}=`)).toBe(true);
    expect(attributes(plain)).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/', 'max-age=43200']));
    expect(attributes(plain)).not.toContain('secure');
    const behindTls = await login(stack.baseUrl, { 'x-forwarded-proto': 'https' });
    expect(attributes(behindTls)).toEqual(expect.arrayContaining(['secure', 'httponly', 'samesite=strict', 'path=/', 'max-age=43200']));
    const cookie = plain.split(';')[0]!;
    expect(cookie).not.toContain(TOKEN);
    expect((await send(stack.baseUrl, 'GET', '/admin/api/sessions', { cookie })).status).toBe(200);
  });

  it('an expired cookie is refused (401), and so is one whose expiry was moved', async () => {
    const get = (value: string) => send(stack.baseUrl, 'GET', '/admin/api/sessions', { cookie: `${ADMIN_COOKIE}=${encodeURIComponent(value)}` });
    expect((await get(adminCookieValue(TOKEN))).status).toBe(200);
    expect((await get(adminCookieValue(TOKEN, Date.now() - 11 * HOUR))).status).toBe(200);
    expect((await get(adminCookieValue(TOKEN, Date.now() - 12 * HOUR - 1000))).status).toBe(401);
    expect((await get(adminCookieValue(TOKEN, Date.now() - 30 * 24 * HOUR))).status).toBe(401);
    // Extending a copied cookie: its MAC covers the old expiry, not the new one.
    const old = adminCookieValue(TOKEN, Date.now() - 13 * HOUR);
    const mac = old.slice(old.lastIndexOf('.') + 1);
    expect((await get(`${Date.now() + HOUR}.${mac}`)).status).toBe(401);
    expect((await get(adminCookieValue('another-token-of-12+'))).status).toBe(401);
  });

  it('without TRUST_PROXY, X-Forwarded-Proto does not make the cookie Secure (anyone could send it)', async () => {
    const direct = await startStack('sec-cookie-direct', { ADMIN_TOKEN: TOKEN });
    try {
      expect(attributes(await login(direct.baseUrl, { 'x-forwarded-proto': 'https' }))).not.toContain('secure');
    } finally {
      await direct.close();
    }
  });
});
