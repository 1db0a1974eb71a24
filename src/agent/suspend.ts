/**
 * The run stopped at a step boundary without reaching a terminal state, and must not report one:
 * its turn is resumed from the journal by another run. `shutdown`: the worker is stopping;
 * `fenced`: another run now owns the turn (this one lost its lock or its session).
 * The one thing the loop throws (runAgent otherwise encodes every failure as an outcome).
 */
export class RunSuspended extends Error {
  override readonly name: string = 'RunSuspended';
  constructor(
    readonly why: 'shutdown' | 'fenced',
    message: string,
  ) {
    super(message);
  }
}
