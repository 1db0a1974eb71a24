/** Why an active run was aborted from outside the loop. */
export type AbortCause = 'cancelled' | 'lock_lost' | 'shutdown';

interface ActiveRun {
  jobId: string;
  controller: AbortController;
}

/**
 * The runs this worker process is executing, by session and by job, so a /stop published on
 * Redis or a lost job lock can abort the right one at its next boundary.
 */
export class ActiveRuns {
  private readonly bySession = new Map<string, ActiveRun>();

  register(session: string, jobId: string): AbortController {
    const controller = new AbortController();
    this.bySession.set(session, { jobId, controller });
    return controller;
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

  get size(): number {
    return this.bySession.size;
  }
}
