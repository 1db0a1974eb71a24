import type { Logger } from '../log.js';
import type { InboundMessage } from '../channels/types.js';
import type { PairingStore, PairingRequest, ApprovedUser } from './pairing-store.js';

/** Posts a line into a conversation (the platform's outbound half); how a paired person is told. */
export type Notify = (to: InboundMessage, text: string) => Promise<void>;

export type PairingDecision = { kind: 'approved' | 'denied'; request: PairingRequest; told: boolean } | { kind: 'unknown_code' };

export const APPROVED_TEXT = 'You are in: the operator approved your access. Send your request again and I will work on it.';

/**
 * What an operator does with pairing requests, the same from `npm run admin -- pairing …` and
 * from the admin API: list, approve (the person is told in their DM), deny (silently: a denied
 * person learns nothing new), revoke.
 */
export class PairingAdmin {
  constructor(
    private readonly store: PairingStore,
    private readonly notify: Notify,
    private readonly log: Logger,
  ) {}

  async list(platforms: readonly string[]): Promise<{ pending: PairingRequest[]; approved: ApprovedUser[] }> {
    const pending = (await Promise.all(platforms.map((p) => this.store.pending(p)))).flat();
    const approved = (await Promise.all(platforms.map((p) => this.store.approved(p)))).flat();
    // The reply target stays inside Redis: operators see who asked, not where to post.
    return { pending: pending.map(({ to: _to, ...rest }) => rest as PairingRequest), approved };
  }

  async approve(platform: string, code: string, by: string): Promise<PairingDecision> {
    const request = await this.store.approve(platform, code, by);
    if (!request) return { kind: 'unknown_code' };
    this.log.info({ platform, userId: request.userId, by }, 'pairing approved');
    let told = true;
    await this.notify(request.to, APPROVED_TEXT).catch((err: unknown) => {
      told = false;
      this.log.warn({ platform, userId: request.userId, err }, 'could not tell the approved user');
    });
    return { kind: 'approved', request, told };
  }

  async deny(platform: string, code: string, by: string): Promise<PairingDecision> {
    const request = await this.store.deny(platform, code);
    if (!request) return { kind: 'unknown_code' };
    this.log.info({ platform, userId: request.userId, by }, 'pairing denied');
    return { kind: 'denied', request, told: false };
  }

  async revoke(platform: string, userId: string, by: string): Promise<boolean> {
    const revoked = await this.store.revoke(platform, userId);
    this.log.info({ platform, userId, by, revoked }, 'pairing revoked');
    return revoked;
  }
}
