import type { ApprovalRequest } from './types.js';

/**
 * The run stopped at a step boundary without reaching a terminal state, and must not report one:
 * its turn is resumed from the journal by another run. `shutdown`: the worker is stopping;
 * `fenced`: another run now owns the turn (this one lost its lock or its session); `approval`:
 * a tool call waits for a person's decision.
 * The one thing the loop throws (runAgent otherwise encodes every failure as an outcome).
 */
export class RunSuspended extends Error {
  override readonly name: string = 'RunSuspended';
  constructor(
    readonly why: 'shutdown' | 'fenced' | 'approval',
    message: string,
  ) {
    super(message);
  }
}

/** A tool call needs a decision that is not in the journal yet: the run parks until someone clicks. */
export class ApprovalPending extends RunSuspended {
  override readonly name = 'ApprovalPending';
  constructor(readonly request: ApprovalRequest) {
    super('approval', `${request.name} waits for approval`);
  }
}
