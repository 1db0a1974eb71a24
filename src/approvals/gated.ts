import type { ChannelApprovals } from '../channels/types.js';
import type { AccessGate } from '../access/gate.js';

/**
 * The approval port the gateway gives its channels: every click passes the access gate before
 * the desk looks at it, so a button is no way around pairing or the group policy.
 */
export function gatedApprovals(gate: AccessGate, desk: ChannelApprovals): ChannelApprovals {
  return {
    async decide(id, decision, clicker) {
      if (!(await gate.checkClick(clicker))) return { kind: 'no_access' };
      return desk.decide(id, decision, clicker);
    },
  };
}
