// The Go kinsumer's metrics callbacks, as the `stats` option takes them (public: re-exported by types.ts).

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
