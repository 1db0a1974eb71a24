import { bindingOf, callKey, sameCall } from './approval-binding.js';
import type { ApprovalDecision, StepRecord } from './types.js';

type ModelRecord = Extract<StepRecord, { t: 'model' }>;
type ToolEnd = Extract<StepRecord, { t: 'tool_end' }>;
type Approval = Extract<StepRecord, { t: 'approval' }>;

/**
 * What an earlier run of this turn recorded, looked up the way the loop asks for it. A call is
 * known by its step and id together (ids repeat across steps); a decision only for the same tool
 * and the exact same arguments it was made for.
 */
export class Replay {
  private readonly models = new Map<number, ModelRecord>();
  private readonly ended = new Map<string, ToolEnd>();
  private readonly started = new Set<string>();
  private readonly approvals = new Map<string, Approval>();

  constructor(records: readonly StepRecord[] = []) {
    for (const r of records) {
      if (r.t === 'model') this.models.set(r.step, r);
      else if (r.t === 'tool_start') this.started.add(callKey(r.step, r.callId));
      else if (r.t === 'approval') this.approvals.set(callKey(r.step, r.callId), r);
      else this.ended.set(callKey(r.step, r.callId), r);
    }
  }

  /** The decision on this very call (step, id, tool, arguments), if one was made. */
  approval(call: { step: number; callId: string; name: string; args: string }): Approval | undefined {
    const found = this.approvals.get(callKey(call.step, call.callId));
    return found && sameCall(bindingOf(call), found) ? found : undefined;
  }

  /** The recorded response of model step `step`. */
  model(step: number): ModelRecord | undefined {
    return this.models.get(step);
  }

  /** The recorded result of a step's tool call. */
  result(step: number, callId: string): ToolEnd | undefined {
    return this.ended.get(callKey(step, callId));
  }

  /** The call was started by an earlier run (its result may or may not have been recorded). */
  wasStarted(step: number, callId: string): boolean {
    return this.started.has(callKey(step, callId));
  }
}

/** What the model reads for a side-effecting call whose run died before its result was recorded. */
export function interruptedResult(name: string): { ok: false; content: string; summary: string } {
  return {
    ok: false,
    content: `Error: interrupted: the run was interrupted while ${name} was running, so it may or may not have taken effect; check before repeating it.`,
    summary: `${name} → interrupted (may or may not have taken effect)`,
  };
}

/** What the model reads for a call a person denied, or nobody approved in time. */
export function refusedResult(
  name: string,
  approval: { decision: Exclude<ApprovalDecision, 'approved'>; by?: string },
): { ok: false; content: string; summary: string } {
  const why = approval.decision === 'denied' ? `denied by ${approval.by ?? 'the approver'}` : 'not approved in time (the approval expired)';
  return { ok: false, content: `Error: not run: ${name} was ${why}. Do not retry it; answer without it or ask the user.`, summary: `${name} → ${why}` };
}

/** A call that needs approval in a run nobody can approve (a scheduled turn): refused at once. */
export function unattendedResult(name: string, why: string): { ok: false; content: string; summary: string } {
  return {
    ok: false,
    content: `Error: not run: ${name} needs a person's approval, and ${why}. Do not retry it; answer without it and say what was not done.`,
    summary: `${name} → refused: nobody can approve in this run`,
  };
}
