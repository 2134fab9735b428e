// The seams of the library: what the RxJS composition needs from the checkpoint store and from
// the stream. Every method returns a cold Observable of one request (subscribe = send,
// unsubscribe = abort), so the same composition runs on DynamoDB/Kinesis adapters, on in-memory
// fakes, and on virtual time.
import type { Observable } from 'rxjs';
import type { Position } from './position.js';

// ---------------------------------------------------------------- checkpoints and leases

/**
 * A shard's stored checkpoint: a position, or the operator-written magic `LATEST` (the Go
 * kinsumer's convention), or a start set by `reset` (`TRIM_HORIZON`, `AT_TIMESTAMP`), or none
 * (`undefined`: never consumed, the `initialPosition` option decides).
 */
export type StoredCheckpoint =
  /** A record's position: reading resumes after it. */
  | {
    /** Which kind of checkpoint. */
    readonly type: 'position';
    /** The last record (or KPL sub-record) checkpointed. */
    readonly position: Position;
  }
  /** The magic `LATEST` an operator wrote: reading starts at the tip of the shard. */
  | {
    /** Which kind of checkpoint. */
    readonly type: 'LATEST';
    /** The checkpoint this one replaced (a reset): nothing at or before it is read again. */
    readonly after?: Position;
    /**
     * The start time this one replaced (a reset after a reset to a timestamp): what arrived before
     * it was consumed or skipped on purpose, so the start a lease keeps is never earlier.
     */
    readonly notBefore?: Date;
  }
  /** Set by `reset`: reading starts at the oldest record kept. */
  | {
    /** Which kind of checkpoint. */
    readonly type: 'TRIM_HORIZON';
  }
  /** Set by `reset`: reading starts at the first record that arrived at or after `timestamp`. */
  | {
    /** Which kind of checkpoint. */
    readonly type: 'AT_TIMESTAMP';
    /** Where reading starts. */
    readonly timestamp: Date;
    /**
     * A floor: records at or before this position are not read again. A `LATEST` start kept as a
     * timestamp (five minutes early, for clock skew) carries the checkpoint a reset replaced, so
     * that margin never re-reads what the group consumed before the reset.
     */
    readonly after?: Position;
  };

/**
 * Records acked beyond the watermark (§7.3): every record of the shard from `from` to `to`, both
 * included, was acked. Positions order as {@link Position}s do (a plain record after the
 * sub-records of its aggregate).
 */
export interface AckedRange {
  /** The first acked record of the range. */
  readonly from: Position;
  /** The last acked record of the range (equal to `from` for a single record). */
  readonly to: Position;
}

/** A row of `<app>_checkpoints`, decoded. */
export interface CheckpointRow {
  /** The row's key (`Shard`). */
  readonly shardId: string;
  /** The stored checkpoint; `undefined` when the shard was never checkpointed. */
  readonly checkpoint: StoredCheckpoint | undefined;
  /** Owner's client id; `undefined` when absent or NULL (unowned). */
  readonly ownerId: string | undefined;
  /** Owner's client name (for humans); `undefined` when absent or NULL. */
  readonly ownerName: string | undefined;
  /** Last capture, commit, renewal or release, Unix nanoseconds (the lease heartbeat). */
  readonly lastUpdateNs: bigint | undefined;
  /** Set once the shard was closed and fully consumed. */
  readonly finished: boolean;
  /**
   * The fencing token of the last capture (or a reset's fence): grows at every capture, never
   * repeats; 0 for rows the Go kinsumer wrote (it drops the attribute).
   */
  readonly leaseCounter: number;
  /**
   * The client that released the lease last (`LastOwnerID`, written by every release). For a
   * finished shard, the client that finished it: its children go there where balance allows.
   */
  readonly lastOwnerId: string | undefined;
  /**
   * When a commit or release last moved the checkpoint (`CheckpointUpdate`, Unix nanoseconds on the
   * writer's clock): the shard's last progress, which renewals do not touch. Absent before the
   * first move, and in rows the Go kinsumer rewrote (it drops the attribute).
   */
  readonly checkpointUpdateNs?: bigint;
  /**
   * Records acked beyond the checkpoint (`AckedRanges`), in order; absent when none, when the row
   * was written by the Go kinsumer (which drops the attribute), or when the attribute cannot be
   * trusted (unreadable, or written with another checkpoint): not knowing them only costs duplicates.
   */
  readonly acked?: readonly AckedRange[];
}

/** A lease this client holds: enough to fence every later write. */
export interface HeldLease {
  /** The leased shard. */
  readonly shardId: string;
  /** This client's id, as written into the row's owner at capture. */
  readonly ownerId: string;
  /** The counter this client's capture wrote; every commit and release is conditioned on it. */
  readonly leaseCounter: number;
  /** The checkpoint as it was at capture. */
  readonly checkpoint: StoredCheckpoint | undefined;
  /** `Finished` as it was at capture: the shard was already fully consumed. */
  readonly finished: boolean;
  /** The records acked beyond the checkpoint, as they were at capture: this owner does not deliver them again. */
  readonly acked?: readonly AckedRange[];
}

/** What a commit or release writes. */
export interface CheckpointWrite {
  /** The new checkpoint; `undefined` leaves the stored one as it is. */
  readonly checkpoint: StoredCheckpoint | undefined;
  /** Write `Finished`: the shard is closed and every record of it was acked. */
  readonly finished: boolean;
  /**
   * The records acked beyond the checkpoint, lowest first, already capped (see `ACKED_RANGES_MAX_BYTES`);
   * they replace the stored ones, and absent or empty removes them.
   */
  readonly acked?: readonly AckedRange[];
}

/**
 * The checkpoints table as a lease store. Writes after capture are fenced: they fail with
 * `LeaseLostError` when the row's owner or lease counter is no longer this lease's.
 */
export interface LeaseStore {
  /** Reads a row (strongly consistent); `undefined` when the shard has none. */
  read(shardId: string): Observable<CheckpointRow | undefined>;
  /** Reads many rows (strongly consistent); rows that do not exist are left out. */
  readMany(shardIds: readonly string[]): Observable<CheckpointRow[]>;
  /**
   * Takes the lease when it is free (owner absent or NULL), expired (not renewed for `leaseTtlMs`),
   * or already this client's. Emits the held lease, or `undefined` when it is not available;
   * never overwrites the stored checkpoint or `Finished`.
   */
  capture(shardId: string): Observable<HeldLease | undefined>;
  /** Writes the checkpoint (and renews the lease). Errors with `LeaseLostError` when fenced. */
  commit(lease: HeldLease, write: CheckpointWrite): Observable<void>;
  /** Renews the lease without changing the checkpoint. Errors with `LeaseLostError` when fenced. */
  renew(lease: HeldLease): Observable<void>;
  /** Writes the final checkpoint and removes the owner (keeps `Finished`). Errors with `LeaseLostError` when fenced. */
  release(lease: HeldLease, write: CheckpointWrite): Observable<void>;
  /**
   * Moves a shard's checkpoint (operator's `reset`), creating the row if needed; keeps `Finished`.
   * Every reset is a fence: it removes the owner and moves the lease counter, so the former owner's
   * next write fails with `LeaseLostError` and whoever captures next reads from the new place.
   * Refused with `LeaseHeldError` while a live owner holds the lease, unless `force`.
   */
  resetCheckpoint(shardId: string, checkpoint: StoredCheckpoint | undefined, options: { readonly force: boolean }): Observable<void>;
}

// ---------------------------------------------------------------- the stream

/** Where GetShardIterator starts. */
export type IteratorStart =
  /** The oldest record kept. */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'TRIM_HORIZON';
  }
  /** Records put after the iterator was issued. */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'LATEST';
  }
  /** The first record that arrived at or after `timestamp`. */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'AT_TIMESTAMP';
    /** The `Timestamp` parameter. */
    readonly timestamp: Date;
  }
  /** The record with this sequence number (a KPL aggregate resumed in its middle). */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'AT_SEQUENCE_NUMBER';
    /** The `StartingSequenceNumber` parameter. */
    readonly sequenceNumber: string;
  }
  /** The record after this sequence number (resuming after a checkpoint). */
  | {
    /** The GetShardIterator `ShardIteratorType`. */
    readonly type: 'AFTER_SEQUENCE_NUMBER';
    /** The `StartingSequenceNumber` parameter. */
    readonly sequenceNumber: string;
  };

/** A record as Kinesis returns it (possibly a KPL aggregate). */
export interface RawRecord {
  /** Kinesis sequence number: a decimal string beyond 2^53. */
  readonly sequenceNumber: string;
  /** The producer's partition key (for an aggregate, the KPL's outer key). */
  readonly partitionKey: string;
  /** The payload: a user record, or a KPL aggregate of several. */
  readonly data: Uint8Array;
  /** When Kinesis accepted the record. */
  readonly approximateArrivalTimestamp: Date;
  /** `KMS` when the stream encrypts records at rest; `NONE` or absent otherwise. */
  readonly encryptionType?: string;
  /**
   * The payload as the wire carried it (base64), when the adapter kept it undecoded; given with
   * `arrivalMs`. A reader then decodes it only when the application reads `data`.
   */
  readonly dataBase64?: string;
  /** `approximateArrivalTimestamp` in epoch milliseconds, given with `dataBase64`. */
  readonly arrivalMs?: number;
}

/** One GetRecords answer. */
export interface RecordsPage {
  /** The records, in sequence order; may be empty even when more follow. */
  readonly records: readonly RawRecord[];
  /** `undefined`: the shard is closed and fully read (end of shard). */
  readonly nextShardIterator: string | undefined;
  /** How far the last record is behind the tip of the shard, in milliseconds, as Kinesis reports it. */
  readonly millisBehindLatest: number | undefined;
  /** Children named by the service at the end of a closed shard (not every server reports them). */
  readonly childShardIds: readonly string[] | undefined;
}

/** A shard as ListShards describes it. */
export interface ShardInfo {
  /** The shard's id, such as `shardId-000000000003`. */
  readonly shardId: string;
  /** `ParentShardId` and `AdjacentParentShardId`, where present. */
  readonly parentShardIds: readonly string[];
  /** `false` once the shard has an ending sequence number (closed by a split or merge). */
  readonly open: boolean;
  /** Lowest hash key of the shard's range (a decimal string up to 2^128 − 1). */
  readonly startingHashKey: string;
  /** Highest hash key of the shard's range, inclusive. */
  readonly endingHashKey: string;
}

/**
 * The Kinesis stream. The adapter maps "stream not found" to `StreamNotFoundError` and lets every
 * other AWS error through untouched (classify it with `classifyAwsError`).
 */
export interface StreamPort {
  /** The stream's name or ARN, for messages. */
  readonly streamLabel: string;
  /** An iterator into a shard from `start` (valid for 5 minutes on Kinesis). */
  getShardIterator(shardId: string, start: IteratorStart): Observable<string>;
  /** At most `limit` (1..10000) records. */
  getRecords(shardIterator: string, limit: number): Observable<RecordsPage>;
  /** Every shard, open and closed, following `NextToken` only when the service returned one. */
  listShards(): Observable<ShardInfo[]>;
  /** Enhanced fan-out (`readMode: 'fan-out'`), where the adapter offers it. */
  readonly fanOut?: FanOutPort;
}

// ---------------------------------------------------------------- enhanced fan-out

/** A registered stream consumer, as DescribeStreamConsumer describes it. */
export interface StreamConsumerInfo {
  /** The name it was registered with. */
  readonly consumerName: string;
  /** Its ARN, which subscriptions name. */
  readonly consumerArn: string;
  /** `CREATING`, `ACTIVE` or `DELETING`. */
  readonly status: string;
}

/** One SubscribeToShardEvent. */
export interface ShardEvent {
  /** The records, in sequence order; may be empty. */
  readonly records: readonly RawRecord[];
  /**
   * Where a new subscription continues (AFTER_SEQUENCE_NUMBER) once every record of this event
   * was delivered; `undefined`: the shard is closed and this was its last event (end of shard).
   */
  readonly continuationSequenceNumber: string | undefined;
  /** How far the event is behind the tip of the shard, in milliseconds, as Kinesis reports it. */
  readonly millisBehindLatest: number | undefined;
  /** Children named by the service in the last event of a closed shard. */
  readonly childShardIds: readonly string[] | undefined;
}

/**
 * An open SubscribeToShard. Events are pulled one at a time: while the reader does not pull, the
 * events stay unread and HTTP/2 flow control holds the service back.
 */
export interface ShardEventPull {
  /**
   * The next event (one request: subscribing pulls it). Emits `undefined` when the service ended
   * the subscription normally (its 5-minute end); errors when the connection failed.
   */
  next(): Observable<ShardEvent | undefined>;
}

/** The stream's enhanced fan-out: its registered consumers and their subscriptions. */
export interface FanOutPort {
  /** `undefined` when no consumer has that name. */
  describeConsumer(consumerName: string): Observable<StreamConsumerInfo | undefined>;
  /** Registers a consumer (status `CREATING`); `ResourceInUseException` when it exists already. */
  registerConsumer(consumerName: string): Observable<StreamConsumerInfo>;
  /** Deregisters a consumer; `ResourceNotFoundException` when there is none. */
  deregisterConsumer(consumerName: string): Observable<void>;
  /**
   * Subscribes the consumer to a shard. Emits one {@link ShardEventPull} once the service accepted,
   * and stays open until unsubscribed: unsubscribing ends the subscription (aborts the request).
   */
  subscribeToShard(consumerArn: string, shardId: string, start: IteratorStart): Observable<ShardEventPull>;
}

// ---------------------------------------------------------------- reader ⇄ checkpointer

/**
 * What a shard reader needs from the checkpoint side of its lease: it registers every record it
 * emits, pauses while too many are pending, and at the end of the shard waits until `Finished`
 * is written.
 */
export interface ShardTracker {
  /**
   * Registers a record about to be emitted, in emission (sequence) order, and returns its ticket
   * for {@link ShardTracker.ack}. The record may be the emitted object itself: the tracker keeps it
   * until it is acked and passed, and reads its `approximateArrivalTimestamp` (the stream's
   * clock) only where it needs it (the first record of a timestamp start).
   */
  track(record: Position & { readonly approximateArrivalTimestamp?: Date }): number;
  /** Acks the record `track` gave this ticket for. Idempotent; acks may come in any order. */
  ack(ticket: number): void;
  /**
   * When a previous owner acked the record at `position` (the ranges stored with the checkpoint),
   * registers it as acked, in emission order like {@link ShardTracker.track}, and returns `true`:
   * the reader does not emit it. Otherwise registers nothing and returns `false` (track it).
   * Absent: nothing is ever skipped.
   */
  skip?(position: Position): boolean;
  /** Records emitted and not yet acked. */
  inFlight(): number;
  /**
   * Records emitted and not yet under the checkpoint watermark: unacked, or acked behind an unacked
   * one. Readers pause while `maxInFlightRecords` are pending, so one record never acked stops the
   * shard at that bound instead of letting the backlog behind it grow.
   */
  pending(): number;
  /** Emits after every ack that changed something, and after a skipped record moved the watermark. */
  readonly acks$: Observable<void>;
  /**
   * The shard is closed and its last record was `last` (`undefined`: nothing read since capture).
   * Completes once every record is acked and `Finished` is written; errors with `LeaseLostError`.
   */
  finish(last: Position | undefined): Observable<void>;
  /**
   * `false` while the lease may have expired unseen: no write has confirmed it for longer than
   * renewals allow (a process frozen by SIGSTOP or a long pause, woken up after its TTL). Readers
   * emit nothing then, until a write confirms the lease or finds it lost, so a zombie does not
   * hand out a backlog it no longer owns. Also `false` until a kept start (a LATEST or timestamp
   * start) is stored, so no record goes out that a hand-off could skip. Absent: always confirmed.
   */
  leaseConfirmed?(): boolean;
  /** Emits after each write that confirmed the lease (a reader held back by {@link ShardTracker.leaseConfirmed} waits for it). */
  readonly confirmed$?: Observable<void>;
  /**
   * The first record a reader is about to deliver since the capture (called before it is tracked).
   * A start kept as a timestamp (a `LATEST` start) is narrowed to it: nothing before it belongs to
   * the group. The reader emits it only once that is stored ({@link ShardTracker.leaseConfirmed}),
   * so a next owner never starts earlier than what was already delivered.
   */
  narrowStart?(first: Position, arrivedAt: Date): void;
}
