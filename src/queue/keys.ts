/**
 * Every Redis key Switchboard reads or writes is built here, and nowhere else (an architecture
 * test holds every other file to it). Every key lives under the hash-tagged prefix (e.g.
 * `{switchboard}`) that BullMQ also uses, so the scripts that touch a session's keys and a job's
 * lock run in one Redis Cluster slot. Libraries that own their keys (BullMQ's queues,
 * rate-limiter-flexible) are given the prefix from here and build their keys under it.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  // ── A session's state (`{prefix}:s:<session>:…`) ──

  /** Messages waiting for a run, oldest first (JSON InboundMessage). */
  inbox(session: string): string {
    return this.session(session, 'inbox');
  }
  /** How many messages at the inbox head the running turn has taken: they are answered, not waiting (SESSION_QUEUE_MAX counts the rest). */
  taken(session: string): string {
    return this.session(session, 'taken');
  }
  /** The job id of the run that holds the session. */
  owner(session: string): string {
    return this.session(session, 'owner');
  }
  /** Past turns, one JSON array of chat messages per entry, oldest first. */
  history(session: string): string {
    return this.session(session, 'history');
  }
  /** How many turns were ever appended to the history (it keeps the last 200): what a summary's `covers` counts. */
  historyCount(session: string): string {
    return this.session(session, 'history:n');
  }
  /** The model's summary of the older turns (JSON HistorySummary), kept beside the raw turns. */
  historySummary(session: string): string {
    return this.session(session, 'history:summary');
  }
  /** The last run's outcome (JSON), for /status. */
  last(session: string): string {
    return this.session(session, 'last');
  }
  /** A committed reply not yet confirmed delivered (JSON). Delivered by whichever run holds the session next. */
  outbox(session: string): string {
    return this.session(session, 'outbox');
  }
  /**
   * The step journal of the turn in progress (JSON entries, oldest first): what was done, written
   * before it is repeated; after the commit, what was delivered of the reply. See journal.ts.
   */
  journal(session: string): string {
    return this.session(session, 'journal');
  }
  /** How many runs have started on each waiting message (message id → count): a message that kills its worker is not retried forever. */
  claims(session: string): string {
    return this.session(session, 'claims');
  }
  /** The agent that answers the session (AGENTS_CONFIG's name), recorded when its first message is queued; /reset clears it. */
  agentOf(session: string): string {
    return this.session(session, 'agent');
  }
  /** The approval a session's parked run waits for (its id). */
  approvalOf(session: string): string {
    return this.session(session, 'approval');
  }
  /** The ids of the conversation's schedules (a set). */
  sessionSchedules(session: string): string {
    return this.session(session, 'schedules');
  }

  // ── The queue's shared state ──

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
  /** A platform event already queued (de-duplication of redeliveries). */
  seen(platform: string, eventId: string): string {
    return `${this.prefix}:seen:${platform}:${eventId}`;
  }
  /** A platform event already answered at once (a command, a refusal): a redelivery is not answered twice. */
  answered(platform: string, eventId: string): string {
    return `${this.prefix}:answered:${platform}:${eventId}`;
  }
  /** Pub/sub channel for cancel requests (/stop, operator cancel). */
  get cancelChannel(): string {
    return `${this.prefix}:cancel`;
  }
  /** One run's record (JSON RunRecord), for the run view. */
  run(runId: string): string {
    return `${this.prefix}:run:${runId}`;
  }
  /** The workers of this queue, scored by their last heartbeat (a sorted set). */
  get workers(): string {
    return `${this.prefix}:workers`;
  }
  /** Each worker's report of its MCP servers (a hash: worker id → JSON). */
  get toolServerReports(): string {
    return `${this.prefix}:mcp:workers`;
  }

  // ── Access ──

  /** A platform's live pairing codes (a hash: code → request JSON). */
  pairingCodes(platform: string): string {
    return `${this.prefix}:pairing:${platform}:codes`;
  }
  /** A platform's paired people (a hash: user id → JSON). */
  pairingApproved(platform: string): string {
    return `${this.prefix}:pairing:${platform}:approved`;
  }
  /** People who may not ask for a new code yet (a hash: user id → since when, ms). */
  pairingCooldown(platform: string): string {
    return `${this.prefix}:pairing:${platform}:cooldown`;
  }
  /** One person's model tokens on one UTC day (`day`: YYYY-MM-DD). */
  tokens(platform: string, userId: string, day: string): string {
    return `${this.prefix}:tokens:${platform}:${userId}:${day}`;
  }
  /** rate-limiter-flexible's `keyPrefix` for USER_RATE_LIMIT (it adds `:<platform>:<userId>`). */
  get rateLimiter(): string {
    return `${this.prefix}:rate`;
  }
  /** The rate limit's verdict on one platform event, so a redelivery is not counted again. */
  rated(platform: string, eventId: string): string {
    return `${this.prefix}:rated:${platform}:${eventId}`;
  }
  /** A person refused in a group was told how to get access (at most once an interval). */
  refusalNotice(platform: string, userId: string): string {
    return `${this.prefix}:access:notice:${platform}:${userId}`;
  }

  // ── Memory ──

  /** One owner's memory in one agent's namespace (a hash: entry id → JSON entry); `owner` is a person or a channel. */
  memory(agent: string, owner: string): string {
    return `${this.prefix}:mem:${encodeURIComponent(agent)}:${encodeURIComponent(owner)}`;
  }
  /** When each entry of that memory was last used (a hash: entry id → ms): eviction and retention go by it. */
  memoryUsed(agent: string, owner: string): string {
    return `${this.memory(agent, owner)}:used`;
  }
  /** The embedding of each entry of that memory (a hash: entry id → JSON vector), when EMBEDDINGS_MODEL is set. */
  memoryVectors(agent: string, owner: string): string {
    return `${this.memory(agent, owner)}:vectors`;
  }
  /** The person an identity was linked to by the operator (`platform:userId` → person id). */
  identity(platformUser: string): string {
    return `${this.prefix}:identity:${platformUser}`;
  }
  /** The agents' namespaces that hold memory of an owner (a set), so one person's memory can be listed or deleted everywhere. */
  memoryNamespaces(owner: string): string {
    return `${this.prefix}:mem-ns:${encodeURIComponent(owner)}`;
  }

  // ── Schedules ──

  /** One schedule (a hash: the definition as JSON and the counters). */
  schedule(id: string): string {
    return `${this.prefix}:schedule:${id}`;
  }
  /** The ids of every schedule (a set). */
  get schedules(): string {
    return `${this.prefix}:schedules`;
  }
  /** The ids of one person's schedules (`owner`: `platform:userId`). */
  ownerSchedules(owner: string): string {
    return `${this.prefix}:schedules:owner:${owner}`;
  }

  // ── Channels' own state ──

  /** A Slack thread in which the bot has answered (for follow-ups without a mention). */
  slackEngagedThread(channel: string, thread: string): string {
    return `${this.prefix}:slack:engaged:${channel}:${thread}`;
  }
  /** A Discord slash command's interaction (for answering it when its turn was folded into a later one). */
  discordInteraction(messageId: string): string {
    return `${this.prefix}:discord:ix:${messageId}`;
  }
  /** The lease of the one gateway that long-polls Telegram for this bot. */
  telegramPoller(botId: string): string {
    return `${this.prefix}:telegram:poller:${botId}`;
  }
  /** The terminal chat's event stream for one conversation. */
  terminalStream(conversation: string): string {
    return `${this.prefix}:term:${encodeURIComponent(conversation)}`;
  }

  private session(session: string, what: string): string {
    return `${this.prefix}:s:${session}:${what}`;
  }
}

/** The keys of the runs queue: the prefix's keys plus BullMQ's per-job keys of that queue. */
export class SessionKeys extends RedisKeys {
  constructor(
    prefix: string,
    readonly queueName: string,
  ) {
    super(prefix);
  }

  /** `{prefix}:{queue}:` — BullMQ's per-job keys are this plus `<jobId>:lock` etc. */
  get jobBase(): string {
    return `${this.prefix}:${this.queueName}:`;
  }
  /** BullMQ's hash of a job (its data, progress, state fields). */
  job(jobId: string): string {
    return `${this.jobBase}${jobId}`;
  }
  jobLock(jobId: string): string {
    return `${this.job(jobId)}:lock`;
  }
  /** BullMQ's list of a job's log rows (what the dashboard shows as its logs). */
  jobLogs(jobId: string): string {
    return `${this.job(jobId)}:logs`;
  }
  /** BullMQ's de-duplication key: the job id that holds a de-duplication id (the session). */
  deduplication(id: string): string {
    return `${this.jobBase}de:${id}`;
  }
}
