import { createHash } from 'node:crypto';

/**
 * What an approval is an approval of: one call of one step, by its id, tool and exact arguments.
 * Call ids come from the model or its server and repeat across steps (some servers number them
 * call_0, call_1 in every response), so a decision is found only for the call it was made for:
 * a later call that reuses an approved id, with another tool or other arguments, asks again.
 */
export interface ApprovalBinding {
  step: number;
  callId: string;
  tool: string;
  /** sha256 of the arguments exactly as the model sent them (hex). */
  argsHash: string;
}

export function bindingOf(call: { step: number; callId: string; name: string; args: string }): ApprovalBinding {
  return { step: call.step, callId: call.callId, tool: call.name, argsHash: argsHash(call.args) };
}

export function argsHash(args: string): string {
  return createHash('sha256').update(args, 'utf8').digest('hex');
}

/** The same call: step, id, tool and arguments all equal. */
export function sameCall(a: ApprovalBinding, b: Partial<ApprovalBinding>): boolean {
  return a.step === b.step && a.callId === b.callId && a.tool === b.tool && a.argsHash === b.argsHash;
}

/** Where a step's call is kept in lookups (ids alone repeat across steps). */
export function callKey(step: number, callId: string): string {
  return `${step}\u0000${callId}`;
}
