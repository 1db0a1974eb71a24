import type { Express } from 'express';
import type { Redis } from 'ioredis';
import type { Config } from '../config/config.js';
import type { Logger } from '../log.js';
import type { Intake } from './intake.js';
import type { OutboundAdapter } from './types.js';
import type { ApprovalDesk } from '../queue/approvals.js';

/*
 * The contract between the roles and a platform channel module. Kept apart from the registry,
 * which loads the modules: a module imports these types without importing the registry back.
 */

/** What a channel's gateway half may use. */
export interface GatewayContext {
  config: Config;
  intake: Intake;
  /** The gateway's HTTP app: webhook routes (Slack events, Telegram webhook) are mounted here before it listens. */
  app: Express;
  redis: Redis;
  /** Hash-tagged key prefix for the channel's own Redis keys (e.g. its de-duplication of redeliveries). */
  prefix: string;
  /** Where approval clicks are decided (a card's Approve / Deny buttons). */
  approvals: ApprovalDesk;
  log: Logger;
}

export interface ChannelHealth {
  /** Connected and receiving (polling, gateway or socket up; webhook registered). */
  connected: boolean;
  /** When the last event arrived, ms since the epoch. */
  lastEventAt?: number;
  /** Why it is not connected, for /readyz. */
  detail?: string;
}

/** A channel's running inbound half in the gateway. */
export interface InboundChannel {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  health(): ChannelHealth;
}

/** What a worker needs to build a channel's outbound half: plain HTTP to the platform, no gateway connection. */
export interface OutboundContext {
  config: Config;
  redis: Redis;
  log: Logger;
}

export interface ChannelModule {
  readonly name: string;
  enabled(config: Config): boolean;
  inbound(ctx: GatewayContext): InboundChannel;
  outbound(ctx: OutboundContext): OutboundAdapter;
}
