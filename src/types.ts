import type { Observable } from 'rxjs';

/**
 * Where a shard is read from when it has no checkpoint yet. A stored checkpoint always wins.
 * `{ timestamp }` reads from the first record that arrived at or after that time (AT_TIMESTAMP).
 */
export type InitialPosition = 'TRIM_HORIZON' | 'LATEST' | { readonly timestamp: Date };

/** Where a lease's reading actually started, as decided from its checkpoint row. */
export type StartingPosition =
  | { readonly type: 'TRIM_HORIZON' }
  | { readonly type: 'LATEST' }
  | { readonly type: 'AT_TIMESTAMP'; readonly timestamp: Date }
  /** After a checkpointed record; with `subSequenceNumber`, after that sub-record of a KPL aggregate. */
  | { readonly type: 'AFTER_SEQUENCE_NUMBER'; readonly sequenceNumber: string; readonly subSequenceNumber?: number };

/** One record of the stream, with everything Kinesis said about it. */
export interface KinsumerRecord {
  readonly shardId: string;
  /** Kinesis sequence number: a decimal string beyond 2^53, compare with `BigInt`. */
  readonly sequenceNumber: string;
  /** Position inside a KPL aggregate; `undefined` for a plain record. */
  readonly subSequenceNumber: number | undefined;
  readonly partitionKey: string;
  readonly explicitHashKey?: string;
  readonly data: Uint8Array;
  readonly approximateArrivalTimestamp: Date;
  /**
   * Marks the record done. The shard's checkpoint moves to the highest record that has been
   * acked together with every record before it. Idempotent; acks may come in any order.
   */
  ack(): void;
}

/** A shard this client holds. */
export interface ShardLease {
  readonly shardId: string;
  /** `ParentShardId` and `AdjacentParentShardId` of the shard, when it came from a reshard. */
  readonly parentShardIds: readonly string[];
  readonly startingPosition: StartingPosition;
  /**
   * Grows by one each time any client captures the shard. Downstream systems can keep the highest
   * token they have seen per shard and refuse writes carrying a lower one (fencing).
   */
  readonly fencingToken: number;
  /**
   * The shard's records in sequence order. Completes when the shard is fully consumed (and marked
   * finished) or the lease is given up; errors with `LeaseLostError` when another client took it.
   */
  readonly records$: Observable<KinsumerRecord>;
}

/** What a lease was released with. */
export interface CheckpointPosition {
  readonly sequenceNumber: string;
  readonly subSequenceNumber?: number;
}

/** Everything kinsumer reports, as a discriminated union on `type`. */
export type KinsumerEvent =
  | { readonly type: 'lease-acquired'; readonly shardId: string; readonly fencingToken: number; readonly startingPosition: StartingPosition }
  | { readonly type: 'lease-released'; readonly shardId: string; readonly checkpoint: CheckpointPosition | undefined; readonly finished: boolean }
  | { readonly type: 'lease-lost'; readonly shardId: string; readonly error: Error }
  | { readonly type: 'shard-finished'; readonly shardId: string; readonly childShardIds: readonly string[] }
  | { readonly type: 'checkpoint'; readonly shardId: string; readonly checkpoint: CheckpointPosition | undefined; readonly finished: boolean }
  | { readonly type: 'leader-acquired'; readonly clientId: string }
  | { readonly type: 'leader-lost'; readonly clientId: string }
  | { readonly type: 'rebalance'; readonly clients: number; readonly assigned: readonly string[]; readonly acquire: readonly string[]; readonly release: readonly string[] }
  | { readonly type: 'retrying'; readonly operation: string; readonly attempt: number; readonly delayMs: number; readonly error: Error; readonly shardId?: string }
  | { readonly type: 'record-undecodable'; readonly shardId: string; readonly sequenceNumber: string; readonly error: Error }
  | { readonly type: 'error'; readonly error: Error; readonly shardId?: string };

/** The `type` values of {@link KinsumerEvent}. */
export type KinsumerEventType = KinsumerEvent['type'];

/**
 * A pino-compatible logger: kinsumer calls `logger.warn({ shardId, err }, 'message')`.
 * Record contents and credentials are never logged.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
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
