import { expect } from 'vitest';
import { CODE_ALPHABET, CODE_LENGTH } from '../../src/access/pairing-code.js';
import type { PairingRequest } from '../../src/access/pairing-store.js';
import { spawnNode } from '../helpers/processes.js';
import type { Stack } from '../helpers/stack.js';

/** Shared by the access-control tests that drive the real SDKs (slack-access, discord-access). */

export const ADMIN_TOKEN = 'access-test-admin-token-0123';

/** A pairing code on a line of its own: 8 characters of the alphabet without 0/O/1/I/L. */
const CODE_LINE = new RegExp(`^[${CODE_ALPHABET}]{${CODE_LENGTH}}$`, 'm');

/** The code in a pairing reply; fails the test when the reply has none. */
export function codeIn(text: string | undefined): string {
  const code = CODE_LINE.exec(text ?? '')?.[0];
  if (!code) throw new Error(`no pairing code in ${JSON.stringify(text)}`);
  expect(code).not.toMatch(/[0O1IL]/);
  return code;
}

export function hasCode(text: string): boolean {
  return CODE_LINE.test(text);
}

/** The whole pairing reply, as the person reads it. */
export function expectPairingReply(text: string | undefined, code = codeIn(text)): void {
  expect(text).toBe(
    [
      'Hi! This assistant is private. To ask for access, send its operator this code:',
      code,
      'It is valid for 60 min. I will tell you here once you are in; until then I do not read your messages.',
    ].join('\n'),
  );
}

export const FULL_TEXT = 'Sorry, this assistant is private, and it cannot take new access requests right now. Please try again later.';
export const NOT_ENABLED_TEXT = 'Sorry, I am not enabled in this conversation.';

/** The admin API with the bearer token (or `token`). */
export async function adminApi(stack: Stack, method: 'GET' | 'POST', path: string, token: string | null = ADMIN_TOKEN): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}/admin/api/pairing${path}`, { method, headers: token === null ? {} : { authorization: `Bearer ${token}` } });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // plain text (e.g. 401)
  }
  return { status: res.status, body };
}

/** `npm run admin -- pairing …` as its own process, against the stack's Redis and prefix. */
export async function adminCli(stack: Stack, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnNode('src/cli/admin.ts', ['pairing', ...args], {
    REDIS_URL: stack.config.redis.url,
    QUEUE_PREFIX: stack.config.queue.prefix,
    LOG_LEVEL: 'warn',
    ...env,
  });
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

export function codesKey(stack: Stack, platform: string): string {
  return `${stack.config.queue.prefix}:pairing:${platform}:codes`;
}

export async function storedRequests(stack: Stack, platform: string): Promise<PairingRequest[]> {
  return Object.values(await stack.redis.hgetall(codesKey(stack, platform))).map((raw) => JSON.parse(raw) as PairingRequest);
}

/** Every session key (inbox, owner, history, …) under the stack's prefix. */
export async function sessionKeys(stack: Stack): Promise<string[]> {
  const pattern = `${stack.config.queue.prefix.replace(/[{}[\]*?]/g, '\\$&')}:s:*`;
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await stack.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found.sort();
}

export async function jobCounts(stack: Stack): Promise<Record<string, number>> {
  return stack.queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized');
}

/** Nothing of `session` was queued: its inbox is empty and no key of it exists. */
export async function expectSessionUntouched(stack: Stack, session: string): Promise<void> {
  expect(await stack.redis.llen(stack.keys.inbox(session))).toBe(0);
  const prefix = `${stack.config.queue.prefix}:s:${session}:`;
  expect((await sessionKeys(stack)).filter((k) => k.startsWith(prefix))).toEqual([]);
}

/** Nothing at all was queued under the stack's prefix, and the model was not asked. */
export async function expectNothingQueued(stack: Stack): Promise<void> {
  expect(await jobCounts(stack)).toEqual({ waiting: 0, active: 0, completed: 0, failed: 0, delayed: 0, prioritized: 0 });
  expect(await sessionKeys(stack)).toEqual([]);
  expect(stack.fake.requests).toHaveLength(0);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
