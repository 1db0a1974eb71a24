import type { AccessConfig } from '../config/config.js';
import type { InboundMessage, RefusalReason } from '../channels/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import { platformName, policyVerdict } from './policy.js';
import type { PairingStore, RequestResult } from './pairing-store.js';
import type { UserRateLimit } from './rate-limit.js';

/** `reply`: what the person is told (absent: nothing, e.g. DMs disabled or a repeated rate-limit refusal). */
export type GateVerdict = { pass: true } | { pass: false; reason: RefusalReason; reply?: string };

/** The terminal chat is local: whoever runs it owns the machine. */
const LOCAL_PLATFORMS = new Set(['terminal']);

/**
 * Who may talk to the bot and how often, checked for every message of a platform channel before
 * anything else happens to it: rate limit first (it bounds what even an unknown sender can make
 * the bot answer), then the DM or group policy, then pairing. A refused message is not queued and
 * never reaches the model; the log names the user, platform and reason, never the text.
 */
export class AccessGate {
  constructor(
    private readonly access: AccessConfig,
    private readonly pairing: PairingStore,
    private readonly rate: UserRateLimit | undefined,
    private readonly log: Logger,
    private readonly metrics?: Metrics,
  ) {}

  /** `command`: the chat command the message is, if any (/stop is never rate-limited: it is how a person calms a run down). */
  async check(message: InboundMessage, command?: string): Promise<GateVerdict> {
    if (LOCAL_PLATFORMS.has(message.platform)) return { pass: true };
    const verdict = await this.decide(message, command);
    if (!verdict.pass) {
      this.log.info({ platform: message.platform, userId: message.sender.id, conversation: message.conversation, eventId: message.eventId, reason: verdict.reason }, 'message refused');
      this.metrics?.refusals.inc({ platform: message.platform, reason: verdict.reason });
    }
    return verdict;
  }

  /**
   * Whether the sender may still be answered here, for a turn they asked for earlier (a
   * schedule firing): the access policy only — no rate limit, no new pairing code.
   */
  async stillAllows(message: InboundMessage): Promise<boolean> {
    if (LOCAL_PLATFORMS.has(message.platform)) return true;
    const policy = policyVerdict(message, this.access);
    if (policy.allow) return true;
    return policy.reason === 'pairing' && (await this.pairing.isApproved(message.platform, message.sender.id));
  }

  private async decide(message: InboundMessage, command: string | undefined): Promise<GateVerdict> {
    if (this.rate && command !== 'stop') {
      const rate = await this.rate.consume(message.platform, message.sender.id, message.eventId);
      if (!rate.ok) {
        return { pass: false, reason: 'rate_limited', ...(rate.first && { reply: `You are sending messages faster than I can take them. Please wait ${rate.retryAfterS} s, then send that again.` }) };
      }
    }
    const policy = policyVerdict(message, this.access);
    if (policy.allow) return { pass: true };
    switch (policy.reason) {
      case 'dm_disabled':
        return { pass: false, reason: 'dm_disabled' };
      case 'not_allowed':
        // In a group the bot stays quiet, as it does for anything not addressed to it.
        return message.where?.kind === 'group'
          ? { pass: false, reason: 'not_allowed' }
          : { pass: false, reason: 'not_allowed', reply: `Sorry, this assistant is private. Your ${platformName(message.platform)} user id is ${message.sender.id}: ask its operator for access.` };
      case 'channel_not_allowed':
        return { pass: false, reason: 'channel_not_allowed', reply: 'Sorry, I am not enabled in this conversation.' };
      case 'pairing': {
        if (await this.pairing.isApproved(message.platform, message.sender.id)) return { pass: true };
        const request = await this.pairing.request(message);
        if (request.kind === 'approved') return { pass: true };
        return { pass: false, reason: 'pairing', reply: pairingReply(request) };
      }
    }
  }
}

function pairingReply(result: Exclude<RequestResult, { kind: 'approved' }>): string {
  if (result.kind === 'full') return 'Sorry, this assistant is private, and it cannot take new access requests right now. Please try again later.';
  const minutes = Math.max(1, Math.round((result.request.expiresAt - Date.now()) / 60_000));
  return [
    'Hi! This assistant is private. To ask for access, send its operator this code:',
    result.request.code,
    `It is valid for ${minutes} min. I will tell you here once you are in; until then I do not read your messages.`,
  ].join('\n');
}
