// What the application hands kinsumer to observe it: a logger and metrics callbacks (exported
// from the public face through types.ts).

/**
 * A pino-compatible logger: kinsumer calls `logger.warn({ shardId, err }, 'message')`.
 * Record contents and credentials are never logged. Without one, warnings and errors go to stderr.
 */
export interface Logger {
  /** Routine detail: checkpoints committed. */
  debug(obj: object, msg?: string): void;
  /** Changes worth knowing: leases acquired and released, shards finished, leadership, rebalances, what a stop waits for. */
  info(obj: object, msg?: string): void;
  /**
   * Trouble kinsumer recovers from, or that needs a look: retries, lost leases, undecodable records,
   * stalled shards, a wait that keeps it from reading anything, a drain that gave up, a start that keeps failing.
   */
  warn(obj: object, msg?: string): void;
  /** Faults that stop a shard or the client. */
  error(obj: object, msg?: string): void;
}

/**
 * Metrics callbacks in the style of the Go kinsumer's StatReceiver. Every method is optional;
 * they run synchronously on kinsumer's path, so keep them cheap.
 */
export interface StatReceiver {
  /** A checkpoint was written (commit or release) with a position. */
  checkpoint?(): void;
  /** A record was emitted: when it entered the stream and when GetRecords returned it. */
  eventToClient?(inserted: Date, retrieved: Date): void;
  /** A GetRecords call returned `count` records; `millisBehindLatest` as reported by Kinesis. */
  eventsFromKinesis?(count: number, shardId: string, millisBehindLatest: number): void;
}
