import type { Config } from '../config/config.js';
import { checkConfig } from './checks/config.js';
import { checkDiscord } from './checks/discord.js';
import { checkExec, checkMcp, checkWorkspace } from './checks/local.js';
import { checkAgents } from './checks/agents.js';
import { checkModel, probeModelTools, skipProbe } from './checks/model.js';
import { checkRedis } from './checks/redis.js';
import { checkSlack } from './checks/slack.js';
import { checkTelegram } from './checks/telegram.js';
import { redact } from './format.js';
import { skip, type CheckResult } from './types.js';

export interface DoctorOptions {
  /** Also send one tiny chat completion that must call a tool. */
  probe?: boolean;
  /** Deadline of each network call (the probe gets the model's own MODEL_TIMEOUT_MS, at most 60 s). */
  timeoutMs?: number;
}

/** Every check, in table order; secrets in what they found are masked. */
export async function runDoctor(env: NodeJS.ProcessEnv, options: DoctorOptions = {}): Promise<CheckResult[]> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const { config, results } = checkConfig(env);
  if (!config) return [...results, skip('everything else', 'not checked until the configuration is valid')];
  const channels = config.channels;
  const [redis, model, probe, slack, telegram, discord, workspace, exec, mcp, agents] = await Promise.all([
    checkRedis(config.redis.url, timeoutMs),
    checkModel(config.model, timeoutMs),
    options.probe ? probeModelTools(config.model, Math.min(config.model.timeoutMs, 60_000)) : Promise.resolve(skipProbe()),
    channels.slack ? checkSlack(channels.slack, timeoutMs) : Promise.resolve([skip('slack', 'SLACK_BOT_TOKEN not set')]),
    channels.telegram ? checkTelegram(channels.telegram, timeoutMs) : Promise.resolve([skip('telegram', 'TELEGRAM_BOT_TOKEN not set')]),
    channels.discord ? checkDiscord(channels.discord, timeoutMs) : Promise.resolve([skip('discord', 'DISCORD_TOKEN not set')]),
    checkWorkspace(config.workspaceRoot),
    checkExec(config.exec),
    checkMcp(config, env),
    checkAgents(config, env),
  ]);
  const all = [...results, ...redis, ...model, probe, ...slack, ...telegram, ...discord, workspace, exec, ...mcp, ...agents];
  const secrets = secretsOf(config, env);
  return all.map((r) => ({ ...r, found: redact(r.found, secrets), ...(r.fix !== undefined && { fix: redact(r.fix, secrets) }) }));
}

/** Every value that must not be printed: tokens, keys, secrets, and the password of REDIS_URL. */
function secretsOf(config: Config, env: NodeJS.ProcessEnv): string[] {
  const named = Object.entries(env)
    .filter(([k, v]) => /TOKEN|KEY|SECRET|PASSWORD/.test(k) && v)
    .map(([, v]) => v!);
  const redisUrl = URL.canParse(config.redis.url) ? new URL(config.redis.url) : undefined;
  const redisSecret = redisUrl?.password ? [decodeURIComponent(redisUrl.password)] : [];
  return [...named, ...redisSecret];
}

export function exitCodeOf(results: readonly CheckResult[]): number {
  return results.some((r) => r.status === 'fail') ? 1 : 0;
}
