/** Why an active run was aborted from outside the loop. */
export type AbortCause = 'cancelled' | 'lock_lost' | 'run_timeout';

export interface RunControls {
  /** Aborts the run now (its model call and tools see the signal). */
  controller: AbortController;
  /** Asks the run to stop at its next step boundary, to be resumed elsewhere. */
  suspend: AbortController;
}

interface ActiveRun extends RunControls {
  jobId: string;
}

/**
 * The runs this worker process is executing, by session and by job, so a /stop published on
 * Redis or a lost job lock can abort the right one at its next boundary, and a shutdown can ask
 * every one of them to stop at a step boundary.
 */
export class ActiveRuns {
  private readonly bySession = new Map<string, ActiveRun>();
  private suspending = false;

  register(session: string, jobId: string): RunControls {
    const run = { jobId, controller: new AbortController(), suspend: new AbortController() };
    // A run that starts while the worker stops goes back to waiting at its first boundary.
    if (this.suspending) run.suspend.abort('shutdown');
    this.bySession.set(session, run);
    return run;
  }

  unregister(session: string, jobId: string): void {
    if (this.bySession.get(session)?.jobId === jobId) this.bySession.delete(session);
  }

  abortSession(session: string, cause: AbortCause): boolean {
    const run = this.bySession.get(session);
    if (!run) return false;
    run.controller.abort(cause);
    return true;
  }

  abortJobs(jobIds: readonly string[], cause: AbortCause): void {
    for (const run of this.bySession.values()) if (jobIds.includes(run.jobId)) run.controller.abort(cause);
  }

  /** Every run, and every run registered from now on, stops at its next step boundary (shutdown). */
  suspendAll(): void {
    this.suspending = true;
    for (const run of this.bySession.values()) run.suspend.abort('shutdown');
  }

  get size(): number {
    return this.bySession.size;
  }
}
