import { existsSync } from 'node:fs';
import { envSchema, type Env } from './schema.js';
import { deriveConfig, type Config } from './config.js';

import { ConfigError } from '../lib/config-error.js';

export { ConfigError };

/** Reads `.env` (the process environment wins over it), validates, and derives the runtime config. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, envFile = '.env'): Config {
  if (env === process.env && existsSync(envFile)) process.loadEnvFile(envFile);
  return deriveConfig(parseEnv(env));
}

export function parseEnv(env: NodeJS.ProcessEnv): Env {
  // An empty value means "unset", as in most .env files.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = envSchema.safeParse(present);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => {
    const name = String(issue.path[0] ?? 'environment');
    const got = present[name];
    // Secrets are never echoed: neither secret variables nor the credentials part of a URL.
    const safe = /TOKEN|KEY|SECRET/.test(name) ? '…' : got?.replace(/\/\/[^/@\s]*@/, '//…@').slice(0, 60);
    const shown = got === undefined ? '' : ` (got "${safe}")`;
    return `config: ${name} ${issue.message}${shown}`;
  });
  throw new ConfigError([...new Set(lines)]);
}
