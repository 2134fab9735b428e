import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { Observable } from 'rxjs';
import type { DataLostEvent } from './reading/data-loss.js';

/**
 * Where a shard is read from when it has no checkpoint yet. A stored checkpoint always wins.
 * `{ timestamp }` reads from the first record that arrived at or after that time (AT_TIMESTAMP).
 */
export type InitialPosition = 'TRIM_HORIZON' | 'LATEST' | {
  /** Read from the first record that arrived at or after this time. */
  readonly timestamp: Date;
};

/** Where a lease's reading actually started, as decided from its checkpoint row. */
export type StartingPosition =
  /** From the oldest record the stream still keeps (no checkpoint, `initialPosition: 'TRIM_HORIZON'`, or a `reset`). */
  | {
    /** The GetShardIterator type used. */
    readonly type: 'TRIM_HORIZON';
  }
  /** From the records that arrive after the lease was captured (no checkpoint and `initialPosition: 'LATEST'`, or a stored `LATEST`). */
  | {
    /** The GetShardIterator type used. */
    readonly type: 'LATEST';
  }
  /** From the first record that arrived at or after a time (`initialPosition: { timestamp }`, or a `reset` to a time). */
  | {
    /** The GetShardIterator type used. */
    readonly type: 'AT_TIMESTAMP';
    /** The time reading starts at. */
    readonly timestamp: Date;
  }
  /** After a checkpointed record; with `subSequenceNumber`, after that sub-record of a KPL aggregate. */
  | {
    /** The GetShardIterator type used. */
    readonly type: 'AFTER_SEQUENCE_NUMBER';
    /** The checkpoint's sequence number (a decimal string beyond 2^53). */
    readonly sequenceNumber: string;
    /** The checkpointed sub-record of a KPL aggregate; its later sub-records are delivered, earlier ones skipped. */
    readonly subSequenceNumber?: number;
  };

/** What {@link KinsumerRecord.ack} may carry. */
export interface AckOptions {
  /** The record's own DynamoDB writes (`Put`, `Update`, `Delete`, `ConditionCheck`): at most 99 actions, 4 MB, no item twice. */
  readonly writes?: readonly TransactWriteItem[];
}

/** One record of the stream, with everything Kinesis said about it. */
export interface KinsumerRecord {
  /** Its identity at every delivery, a key for idempotent writes: `<shardId>/<sequenceNumber>[/<subSequenceNumber>]`. */
  readonly id: string;
  /** Its lease's {@link ShardLease.fencingToken}: a store refusing lower tokens than it has seen never takes a fenced owner's write. */
  readonly fencingToken: number;
  /** The shard the record was read from (with `streams`, its key `<account>:<stream>:<creationEpoch>:<shardId>`). */
  readonly shardId: string;
  /** The name of the stream the record was read from. */
  readonly streamName: string;
  /** Kinesis sequence number: a decimal string beyond 2^53, compare with `BigInt`. */
  readonly sequenceNumber: string;
  /** Position inside a KPL aggregate; `undefined` for a plain record. */
  readonly subSequenceNumber: number | undefined;
  /** The partition key the producer gave (for a KPL sub-record, its own key). */
  readonly partitionKey: string;
  /** The explicit hash key a KPL producer gave the sub-record; absent otherwise (Kinesis does not return it for plain records). */
  readonly explicitHashKey?: string;
  /**
   * The payload, as the producer wrote it (a KPL aggregate is unpacked into its sub-records).
   *
   * A view, as the AWS SDK's own is: a small payload (under 4 KiB) lies in Node's shared 8 KiB
   * Buffer pool, so `data.buffer` holds other records' bytes and unrelated Buffers, and
   * `data.byteOffset` is rarely 0. Read it through `data` itself; copy it with `data.slice()`
   * before keeping or transferring its buffer (`postMessage` with a transfer list,
   * `new Uint8Array(data.buffer)`, a native addon).
   */
  readonly data: Uint8Array;
  /**
   * The payload as UTF-8 text. Throws `RecordDecodeError` (naming this record) when the bytes are
   * not UTF-8: nothing is replaced silently.
   */
  text(): string;
  /**
   * The payload parsed as JSON (UTF-8 text). Throws `RecordDecodeError` when it is not JSON. `T` is
   * what you expect; it is not checked at run time.
   */
  json<T = unknown>(): T;
  /** When Kinesis accepted the record (for KPL sub-records, the aggregate's arrival). */
  readonly approximateArrivalTimestamp: Date;
  /** 1 on a first delivery; 1 plus the deliveries whose lease ended without a graceful release, as its checkpoint row counts them (design §9.3). */
  readonly deliveryCount: number;
  /**
   * Marks the record done. The shard's checkpoint moves to the highest record that has been
   * acked together with every record before it. Idempotent; acks may come in any order. With `{ writes }`
   * it is acked once they commit with the checkpoint covering it in one lease-fenced transaction
   * (docs/exactly-once.md), throws `WritesTooLargeError` or, acked already, `KinsumerError`.
   */
  ack(options?: AckOptions): void;
}

/** A shard this client holds. */
export interface ShardLease {
  /** The leased shard, such as `shardId-000000000003` (with `streams`, its key `<account>:<stream>:<creationEpoch>:<shardId>`). */
  readonly shardId: string;
  /** The name of the shard's stream. */
  readonly streamName: string;
  /** `ParentShardId` and `AdjacentParentShardId` of the shard, when it came from a reshard. */
  readonly parentShardIds: readonly string[];
  /** Where reading this shard started under this lease (its checkpoint, or the initial position). */
  readonly startingPosition: StartingPosition;
  /**
   * Grows each time any client captures the shard (usually by one), also across a rollback to the
   * Go kinsumer, and never repeats. Downstream systems can keep the highest
   * token they have seen per shard and refuse writes carrying a lower one (fencing).
   */
  readonly fencingToken: number;
  /**
   * The shard's records in sequence order. Completes when the shard is fully consumed (and marked
   * finished) or the lease is given up; errors with `LeaseLostError` when another client took it,
   * and with the shard's own fault (a `ShardReadError` for an unknown AWS error, a malformed record,
   * a `CorruptCheckpointError`, a failed checkpoint write), which is also an `error` event naming
   * the shard: the client takes the shard again at the shard-check pace, so a `leases$` pipeline
   * should end that lease's part (`catchError(() => EMPTY)`) rather than let the error through.
   */
  readonly records$: Observable<KinsumerRecord>;
}

/** What a lease was released with. */
export interface CheckpointPosition {
  /** The sequence number of the last record acked together with every record before it. */
  readonly sequenceNumber: string;
  /** Its sub-record inside a KPL aggregate, when the aggregate was only partly acked. */
  readonly subSequenceNumber?: number;
}

/** Everything kinsumer reports, as a discriminated union on `type`. */
export type KinsumerEvent =
  /** This client captured a shard's lease (the {@link ShardLease} is emitted on `leases$`). */
  | {
    /** Which event this is. */
    readonly type: 'lease-acquired';
    /** The shard captured. */
    readonly shardId: string;
    /** The lease's {@link ShardLease.fencingToken}. */
    readonly fencingToken: number;
    /** Where reading the shard starts. */
    readonly startingPosition: StartingPosition;
  }
  /** This client gave a lease up (stop or rebalance) after writing its final checkpoint. */
  | {
    /** Which event this is. */
    readonly type: 'lease-released';
    /** The shard released. */
    readonly shardId: string;
    /** The final position written; `undefined` when the release wrote none (the stored checkpoint stays as it was). */
    readonly checkpoint: CheckpointPosition | undefined;
    /** `true` when the shard is closed and every record of it was acked (it is never read again). */
    readonly finished: boolean;
  }
  /** Another client took the lease: this client stopped reading and checkpointing that shard. */
  | {
    /** Which event this is. */
    readonly type: 'lease-lost';
    /** The shard lost. */
    readonly shardId: string;
    /** The `LeaseLostError` that ended the shard's `records$`. */
    readonly error: Error;
  }
  /** A closed shard (split or merged) was read to its end, every record acked and `Finished` written. */
  | {
    /** Which event this is. */
    readonly type: 'shard-finished';
    /** The finished shard. */
    readonly shardId: string;
    /** Its children as Kinesis named them at the end of the shard (empty when the service did not say). */
    readonly childShardIds: readonly string[];
  }
  /** A shard's checkpoint was committed (which also renews its lease); plain renewals are not reported. */
  | {
    /** Which event this is. */
    readonly type: 'checkpoint';
    /** The shard checkpointed. */
    readonly shardId: string;
    /** The position written; `undefined` when the commit moved no position (it only marked the shard finished). */
    readonly checkpoint: CheckpointPosition | undefined;
    /** `true` when this write marked the closed shard `Finished`. */
    readonly finished: boolean;
  }
  /** This client took the leader lock: it now refreshes the shard list for the group. */
  | {
    /** Which event this is. */
    readonly type: 'leader-acquired';
    /** This client's id. */
    readonly clientId: string;
  }
  /** This client no longer holds the leader lock (stepped down, or another client holds it). */
  | {
    /** Which event this is. */
    readonly type: 'leader-lost';
    /** This client's id. */
    readonly clientId: string;
  }
  /** No longer emitted (kept for compatibility): a process started with a registered `clientId` takes its place, the other ends with `ClientReplacedError`. */
  | {
    /** Which event this is. */
    readonly type: 'duplicate-client';
    /** The clientId two processes share. */
    readonly clientId: string;
  }
  /**
   * This client is kept from reading shards and says why, once per wait: `'leases-held'`, shards
   * assigned to it are leased by another client whose lease has not expired for it (a live holder
   * hands them over; one that ended without `stop()` keeps them until `leaseTtlMs` after its last
   * heartbeat). `'own-client-row'` is no longer emitted: a restart with the same `clientId` waits for nothing.
   */
  | {
    /** Which event this is. */
    readonly type: 'waiting';
    /** What it waits for (see the event's description). */
    readonly reason: 'leases-held' | 'own-client-row';
    /** The shards waited for, sorted. */
    readonly shardIds: readonly string[];
    /** `'leases-held'`: the clients that hold them, as the group's clients rows say (empty when no row names them). */
    readonly holders: readonly string[];
    /** How long from now until what it waits for expires if its holder has stopped; a live holder hands its leases over sooner. */
    readonly boundMs: number;
    /** Leases this client holds meanwhile: 0 while it reads nothing at all. */
    readonly held: number;
  }
  /**
   * A stop began: the client stopped reading and waits for the records it emitted to be acked
   * (at most `boundMs`; with nobody subscribed, only while acks keep coming: `quietMs` without one
   * ends it), then writes its final checkpoints and releases its leases. Emitted when it holds leases.
   */
  | {
    /** Which event this is. */
    readonly type: 'draining';
    /** The leases held, sorted. */
    readonly shardIds: readonly string[];
    /** Records emitted and not acked yet, per shard (shards with none left out). */
    readonly unacked: Readonly<Record<string, number>>;
    /** The longest it waits for them; 0 after a fatal error (nobody can ack: not waited for). */
    readonly boundMs: number;
    /** Set when nobody is subscribed any more: the wait ends after this long without an ack. */
    readonly quietMs?: number;
  }
  /**
   * A graceful end of a lease (a stop or a rebalance) waited its drain bound (or, with nobody
   * subscribed, until acks stopped coming) and records were still unacked: the lease is released
   * without them, and the next owner gets them again (records acked beyond them are not delivered again).
   */
  | {
    /** Which event this is. */
    readonly type: 'drain-gave-up';
    /** The shard released with unacked records. */
    readonly shardId: string;
    /** Records emitted and never acked: the next owner gets them again. */
    readonly unacked: number;
    /** How long the drain waited, in milliseconds. */
    readonly waitedMs: number;
  }
  /**
   * The client keeps failing to start (its tables, its stream or the group cannot be reached):
   * reported once, after its first failed attempts; it goes on trying until `startTimeoutMs`, then
   * fails with `StartTimeoutError`.
   */
  | {
    /** Which event this is. */
    readonly type: 'start-failing';
    /** Failed attempts so far. */
    readonly attempts: number;
    /** The last attempt's error (its `cause` chain leads to the root cause, such as an `EndpointError`). */
    readonly error: Error;
    /** Milliseconds left until `startTimeoutMs` runs out. */
    readonly giveUpInMs: number;
  }
  /** The set of shards assigned to this client, or the assignment rule, changed (membership or shard list changed). */
  | {
    /** Which event this is. */
    readonly type: 'rebalance';
    /** Live clients in the group, this one included. */
    readonly clients: number;
    /** Every shard now assigned to this client, sorted. */
    readonly assigned: readonly string[];
    /** Assigned shards this client does not hold yet: it will capture them. */
    readonly acquire: readonly string[];
    /** Held shards no longer assigned to this client: it will release them. */
    readonly release: readonly string[];
    /**
     * The assignment rule in force: `'sticky'` (balanced, few moves), or `'go'` while a Go
     * kinsumer client is live in the group (the Go kinsumer's round robin, which it computes too,
     * so a fleet can be migrated one process at a time). A change of rule is a `rebalance` too.
     */
    readonly strategy: 'sticky' | 'go';
  }
  /** A request failed with a transient error (throttling, 5xx, lost connection) and is sent again after a delay. */
  | {
    /** Which event this is. */
    readonly type: 'retrying';
    /** What was being done, such as `commit`, `release`, `prepare` or a Kinesis operation. */
    readonly operation: string;
    /** 1 for the first retry, growing until a success resets it. */
    readonly attempt: number;
    /** Milliseconds until the retry (capped exponential backoff with jitter). */
    readonly delayMs: number;
    /** The error that failed the request. */
    readonly error: Error;
    /** The shard concerned, for per-shard operations. */
    readonly shardId?: string;
  }
  /**
   * A shard's checkpoint has not moved for `sinceMs` while records of it are pending: the oldest
   * one was never acked. Its reading stops at `maxInFlightRecords` pending records. Reported after
   * `stallWarningMs`, then again every `stallWarningMs` while it lasts.
   */
  | {
    /** Which event this is. */
    readonly type: 'shard-stalled';
    /** The stalled shard. */
    readonly shardId: string;
    /** The oldest record not acked: the one holding the checkpoint back. */
    readonly oldest: {
      /** Its sequence number. */
      readonly sequenceNumber: string;
      /** Its sub-record inside a KPL aggregate. */
      readonly subSequenceNumber?: number;
    };
    /** Records emitted and not yet under the checkpoint: `oldest`, and every record after it. */
    readonly pending: number;
    /** Milliseconds since the checkpoint last moved (or since records became pending, if later). */
    readonly sinceMs: number;
  }
  /** A record looked like a KPL aggregate but did not decode: it is delivered raw, as one record. */
  | {
    /** Which event this is. */
    readonly type: 'record-undecodable';
    /** The shard the record was read from. */
    readonly shardId: string;
    /** The record's sequence number. */
    readonly sequenceNumber: string;
    /** Why it did not decode. */
    readonly error: Error;
  }
  /**
   * Something in the application's setup kinsumer works around at a cost, said once, at start, with
   * the fix: `'connection-per-call'` — a client's request handler, one the application configured
   * (its own agent or connect options), opens a connection (a TLS handshake) for every call, and
   * kinsumer must send its calls through it.
   */
  | {
    /** Which event this is. */
    readonly type: 'warning';
    /** What it is about. */
    readonly code: 'connection-per-call';
    /** The client concerned. */
    readonly service: 'kinesis' | 'dynamodb';
    /** What is wrong, and the fix. */
    readonly message: string;
  }
  /**
   * A fault reported rather than retried with backoff: one shard's (an unknown AWS error, a malformed
   * record, a corrupt or unwritable checkpoint: that shard's reading ends and the shard is taken
   * again at the shard-check pace; or its release failed), one coordination round's (tried again at
   * the next shard check), a stop's that nobody awaited (`ShutdownTimeoutError`), or one that stops
   * the client (`records$` and `leases$` error with it too).
   */
  | {
    /** Which event this is. */
    readonly type: 'error';
    /** The fault, typically a {@link KinsumerError} with the AWS error as its `cause`. */
    readonly error: Error;
    /** The shard concerned, when the fault is one shard's. */
    readonly shardId?: string;
  }
  | DataLostEvent;

/** The `type` values of {@link KinsumerEvent}. */
export type KinsumerEventType = KinsumerEvent['type'];

// Kept with what uses them: the application's observers, and the connection counts of status().
export type { Logger, StatReceiver } from './telemetry/observers.js';
export type { ConnectionCounts, ConnectionsStatus } from './connections/own-connections.js';
export type { KinsumerState, KinsumerStatus, ShardStatus } from './telemetry/status.js';
export type { StreamStatus } from './telemetry/stream-status.js';
