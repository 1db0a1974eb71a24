import type { AccessConfig } from '../config/config.js';
import type { ApprovalClicker, InboundMessage, RefusalReason } from '../channels/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import { platformName, policyVerdict } from './policy.js';
import type { PairingStore, RequestResult } from './pairing-store.js';
import type { UserRateLimit } from './rate-limit.js';
import type { RefusalNotices } from './refusal-notice.js';

/** `reply`: what the person is told (absent: nothing, e.g. DMs disabled or a repeated rate-limit refusal). */
export type GateVerdict = { pass: true } | { pass: false; reason: RefusalReason; reply?: string };

/** The terminal chat is local: whoever runs it owns the machine. */
const LOCAL_PLATFORMS = new Set(['terminal']);

export interface GateOptions {
  /** The per-user rate limit (gateways; a worker re-checking a schedule firing has none). */
  rate?: UserRateLimit;
  /** Once-an-hour notices to people refused in a group; without it they are refused quietly. */
  notices?: RefusalNotices;
  /** APPROVERS (`platform:userId`): named by the operator, so their clicks need no pairing. */
  approvers?: readonly string[];
  metrics?: Metrics;
}

/**
 * Who may reach the bot, decided here for every inbound kind: a message (DM, group mention, slash
 * command — the intake), a button click (the approval port, `checkClick`) and a schedule firing
 * (`stillAllows`). For messages the rate limit comes first (it bounds what even an unknown sender
 * can make the bot answer), then the DM or group policy, then pairing. A refused message is not
 * queued and never reaches the model; the log names the user, platform and reason, never the text.
 */
export class AccessGate {
  private readonly rate: UserRateLimit | undefined;
  private readonly metrics: Metrics | undefined;

  constructor(
    private readonly access: AccessConfig,
    private readonly pairing: PairingStore,
    private readonly log: Logger,
    private readonly options: GateOptions = {},
  ) {
    this.rate = options.rate;
    this.metrics = options.metrics;
  }

  /** `command`: the chat command the message is, if any (/stop is never rate-limited: it is how a person calms a run down). */
  async check(message: InboundMessage, command?: string): Promise<GateVerdict> {
    if (LOCAL_PLATFORMS.has(message.platform)) return { pass: true };
    const verdict = await this.decide(message, command);
    if (!verdict.pass) {
      this.log.info(
        { platform: message.platform, userId: message.sender.id, conversation: message.conversation, eventId: message.eventId, reason: verdict.reason },
        'message refused',
      );
      this.metrics?.refusals.inc({ platform: message.platform, reason: verdict.reason });
    }
    return verdict;
  }

  /**
   * Whether the sender may still be answered here, for a turn they asked for earlier (a
   * schedule firing): the access policy only — no rate limit, no new pairing code.
   */
  async stillAllows(message: Pick<InboundMessage, 'platform' | 'sender' | 'where'>): Promise<boolean> {
    if (LOCAL_PLATFORMS.has(message.platform)) return true;
    const policy = policyVerdict(message, this.access);
    if (policy.allow) return true;
    return policy.reason === 'pairing' && (await this.pairing.isApproved(message.platform, message.sender.id));
  }

  /**
   * A click on a card's button: the clicker must be someone the bot would answer (as in a group:
   * listed, paired, a member of a vouched place), or a named approver. Who may decide which call
   * is the approval desk's rule, after this.
   */
  async checkClick(clicker: ApprovalClicker): Promise<boolean> {
    if (LOCAL_PLATFORMS.has(clicker.platform)) return true;
    if (this.options.approvers?.includes(`${clicker.platform}:${clicker.userId}`)) return true;
    const allowed = await this.stillAllows({
      platform: clicker.platform,
      sender: { id: clicker.userId, ...(clicker.foreign && { foreign: true }) },
      where: { kind: 'group', ids: [clicker.chat] },
    });
    if (!allowed) {
      this.log.info({ platform: clicker.platform, userId: clicker.userId, chat: clicker.chat, reason: 'click_not_allowed' }, 'button click refused');
      this.metrics?.refusals.inc({ platform: clicker.platform, reason: 'not_allowed' });
    }
    return allowed;
  }

  private async decide(message: InboundMessage, command: string | undefined): Promise<GateVerdict> {
    if (this.rate && command !== 'stop') {
      const rate = await this.rate.consume(message.platform, message.sender.id, message.eventId);
      if (!rate.ok) {
        return {
          pass: false,
          reason: 'rate_limited',
          ...(rate.first && { reply: `You are sending messages faster than I can take them. Please wait ${rate.retryAfterS} s, then send that again.` }),
        };
      }
    }
    const policy = policyVerdict(message, this.access);
    if (policy.allow) return { pass: true };
    switch (policy.reason) {
      case 'dm_disabled':
        return { pass: false, reason: 'dm_disabled' };
      case 'not_allowed':
        if (message.where?.kind === 'group') return this.groupRefusal(message, 'not_allowed');
        return {
          pass: false,
          reason: 'not_allowed',
          reply: `Sorry, this assistant is private. Your ${platformName(message.platform)} user id is ${message.sender.id}: ask its operator for access.`,
        };
      case 'channel_not_allowed':
        return { pass: false, reason: 'channel_not_allowed', reply: 'Sorry, I am not enabled in this conversation.' };
      case 'pairing': {
        if (await this.pairing.isApproved(message.platform, message.sender.id)) return { pass: true };
        // Never a code in a group: everyone there would read it.
        if (message.where?.kind === 'group') return this.groupRefusal(message, 'pairing');
        const request = await this.pairing.request(message);
        if (request.kind === 'approved') return { pass: true };
        return { pass: false, reason: 'pairing', reply: pairingReply(request) };
      }
    }
  }

  /** A group mention by someone without access: refused, with a short notice at most once an hour per person. */
  private async groupRefusal(message: InboundMessage, reason: 'pairing' | 'not_allowed'): Promise<GateVerdict> {
    const notices = this.options.notices;
    const tell = notices !== undefined && (await notices.first(message.platform, message.sender.id));
    return { pass: false, reason, ...(tell && { reply: groupNotice(reason) }) };
  }
}

/** What a person refused in a group is told (once an hour at most): where to ask, never a code. */
function groupNotice(reason: 'pairing' | 'not_allowed'): string {
  return reason === 'pairing'
    ? 'Sorry, I only answer people who have access. Send me a direct message to ask for it.'
    : "Sorry, I only answer people who have access here: ask this assistant's operator.";
}

/** "24 h", "3 h", "40 min": rounded up, so the person never asks too early. */
function waitFor(ms: number): string {
  return ms > 3_600_000 ? `${Math.ceil(ms / 3_600_000)} h` : `${Math.max(1, Math.ceil(ms / 60_000))} min`;
}

function pairingReply(result: Exclude<RequestResult, { kind: 'approved' }>): string {
  if (result.kind === 'full') return 'Sorry, this assistant is private, and it cannot take new access requests right now. Please try again later.';
  // The same words for an expired and a denied request: a denial is never announced.
  if (result.kind === 'cooldown')
    return `Sorry, this assistant is private, and your last access request has closed. You can ask again in ${waitFor(result.retryAt - Date.now())}.`;
  const minutes = Math.max(1, Math.round((result.request.expiresAt - Date.now()) / 60_000));
  return [
    'Hi! This assistant is private. To ask for access, send its operator this code:',
    result.request.code,
    `It is valid for ${minutes} min. I will tell you here once you are in; until then I do not read your messages.`,
  ].join('\n');
}
