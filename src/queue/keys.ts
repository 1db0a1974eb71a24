/**
 * Every key lives under the hash-tagged prefix (e.g. `{switchboard}`) that BullMQ also uses, so
 * the scripts that touch a session's keys and a job's lock run in one Redis Cluster slot.
 */
export class SessionKeys {
  constructor(
    readonly prefix: string,
    readonly queueName: string,
  ) {}

  /** `{prefix}:{queue}:` — BullMQ's per-job keys are this plus `<jobId>:lock` etc. */
  get jobBase(): string {
    return `${this.prefix}:${this.queueName}:`;
  }
  jobLock(jobId: string): string {
    return `${this.jobBase}${jobId}:lock`;
  }
  /** Messages waiting for a run, oldest first (JSON InboundMessage). */
  inbox(session: string): string {
    return `${this.prefix}:s:${session}:inbox`;
  }
  /** The job id of the run that holds the session. */
  owner(session: string): string {
    return `${this.prefix}:s:${session}:owner`;
  }
  /** Past turns, one JSON array of chat messages per entry, oldest first. */
  history(session: string): string {
    return `${this.prefix}:s:${session}:history`;
  }
  /** How many turns were ever appended to the history (it keeps the last 200): what a summary's `covers` counts. */
  historyCount(session: string): string {
    return `${this.prefix}:s:${session}:history:n`;
  }
  /** The model's summary of the older turns (JSON HistorySummary), kept beside the raw turns. */
  historySummary(session: string): string {
    return `${this.prefix}:s:${session}:history:summary`;
  }
  /** The last run's outcome (JSON), for /status. */
  last(session: string): string {
    return `${this.prefix}:s:${session}:last`;
  }
  /** A committed reply not yet confirmed delivered (JSON). Delivered by whichever run holds the session next. */
  outbox(session: string): string {
    return `${this.prefix}:s:${session}:outbox`;
  }
  /**
   * The step journal of the turn in progress (JSON entries, oldest first): what was done, written
   * before it is repeated; after the commit, what was delivered of the reply. See journal.ts.
   */
  journal(session: string): string {
    return `${this.prefix}:s:${session}:journal`;
  }
  /** How many runs have started on each waiting message (message id → count): a message that kills its worker is not retried forever. */
  claims(session: string): string {
    return `${this.prefix}:s:${session}:claims`;
  }
  /** The approval a session's parked run waits for (its id). */
  approvalOf(session: string): string {
    return `${this.prefix}:s:${session}:approval`;
  }
  /** One approval: the tool call, who may decide, the decision (a hash). */
  approval(id: string): string {
    return `${this.prefix}:approval:${id}`;
  }
  /** Inbox entries no run could read (moved aside so their session goes on), for an operator to look at. */
  get unreadable(): string {
    return `${this.prefix}:unreadable`;
  }
  /** Sessions with a non-empty inbox: what the reconciler walks. */
  get pending(): string {
    return `${this.prefix}:pending`;
  }
  seen(platform: string, eventId: string): string {
    return `${this.prefix}:seen:${platform}:${eventId}`;
  }
  /** Pub/sub channel for cancel requests (/stop, operator cancel). */
  get cancelChannel(): string {
    return `${this.prefix}:cancel`;
  }
}
