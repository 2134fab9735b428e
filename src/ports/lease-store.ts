// The checkpoints table as the core needs it: shard leases, their checkpoints, and the conditional
// writes that fence them. Every method returns a cold Observable of one request (subscribe = send,
// unsubscribe = abort), so the same composition runs on DynamoDB, on the in-memory store, and on
// virtual time.
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { Observable } from 'rxjs';
import type { Position } from './position.js';

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
    /**
     * The moment of the reset that wrote it, on the store's clock (DynamoDB's `Date`): reading
     * starts at the first record that arrived at or after it, so a record put between the reset
     * and the next capture is delivered too (design §8.3). Absent on rows older readers wrote:
     * those start at the tip at their capture.
     */
    readonly resetAt?: Date;
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

/**
 * Deliveries of the records after a checkpoint by sessions (leases) that ended without a graceful
 * release (design §9.3, the delivery count): `sessions` of them delivered every record after the
 * checkpoint through `through`. A record's `deliveryCount` is 1 plus the sessions of every entry
 * reaching it.
 */
export interface DeliveredThrough {
  /** The last record these sessions delivered. */
  readonly through: Position;
  /** How many sessions delivered it, and every record between the checkpoint and it. */
  readonly sessions: number;
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
  /**
   * The owner's life when it captured the lease (`OwnerIncarnation`): the lease lives as long as
   * that life does (its clients row heartbeats). Absent in rows the Go kinsumer or an older
   * kinsumer-ts wrote: such a lease lives by its own row's renewals.
   */
  readonly ownerIncarnation?: number;
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
  /**
   * The token of the last transaction that committed records' writes with the checkpoint
   * (`TransactionToken`, §8.1); absent before the first, and in rows the Go kinsumer rewrote.
   */
  readonly transactionToken?: string;
  /**
   * Deliveries recorded beyond the checkpoint (`Deliveries`, §9.3), lowest first; absent when none,
   * when the row was written by the Go kinsumer, or when the attribute cannot be trusted (it was
   * written with another checkpoint): not knowing them only counts fewer deliveries.
   */
  readonly deliveries?: readonly DeliveredThrough[];
}

/** A lease this client holds: enough to fence every later write. */
export interface HeldLease {
  /** The leased shard. */
  readonly shardId: string;
  /** This client's id, as written into the row's owner at capture. */
  readonly ownerId: string;
  /** The counter this client's capture wrote; every commit and release is conditioned on it. */
  readonly leaseCounter: number;
  /** The life this process captured it in (absent before its first registration, or with a store that knows no lives). */
  readonly ownerIncarnation?: number;
  /** The checkpoint as it was at capture. */
  readonly checkpoint: StoredCheckpoint | undefined;
  /** `Finished` as it was at capture: the shard was already fully consumed. */
  readonly finished: boolean;
  /** The records acked beyond the checkpoint, as they were at capture: this owner does not deliver them again. */
  readonly acked?: readonly AckedRange[];
  /**
   * The store's clock when it accepted the capture (DynamoDB's `Date` header: whole seconds), a
   * moment before this owner asks for its first iterator: a LATEST start it keeps is judged by
   * it, not by the client's clock. Absent where the store tells no clock.
   */
  readonly capturedAt?: Date;
  /** The row's `TransactionToken` at capture (the last transaction's, whoever sent it): the first transaction of this lease follows it. */
  readonly transactionToken?: string;
  /** The deliveries recorded beyond the checkpoint at capture, by earlier sessions (§9.3). */
  readonly deliveries?: readonly DeliveredThrough[];
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
  /** The deliveries recorded beyond the checkpoint (§9.3), lowest first; they replace the stored ones, and absent or empty removes them. */
  readonly deliveries?: readonly DeliveredThrough[];
}

/** Records' own writes to commit with the checkpoint that covers them, in one transaction (§8.1). */
export interface WritesTransaction {
  /**
   * Names this transaction (1 to 36 characters): sent as `ClientRequestToken`, so an identical
   * re-send within 10 minutes is applied once, and stored in the row, where the next
   * transaction's condition expects it, so a re-send that comes later can never apply twice.
   */
  readonly token: string;
  /** The writes, in order; the checkpoint's action goes before them. */
  readonly writes: readonly TransactWriteItem[];
  /**
   * The token the row holds, as this lease knows it (`HeldLease.transactionToken`, then each of
   * its transactions known to have applied; `undefined`: none). The checkpoint's condition expects
   * it, so a transaction applies only right after that one, and one sent later can never apply.
   */
  readonly after: string | undefined;
  /**
   * Tokens of earlier transactions of this lease whose outcome is unknown (never answered with a
   * success, given up). When this one's checkpoint condition fails and the row holds one of them,
   * that one applied: `commitWithWrites` errors with `EarlierTransactionAppliedError`, and the next
   * transaction's condition expects that token.
   */
  readonly earlier?: readonly string[];
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
  /**
   * Writes the checkpoint and `transaction.writes` in one transaction, conditioned on the lease and
   * on the last transaction this lease committed (so each commits once, however often it is sent).
   * Errors with `LeaseLostError` when fenced, `TransactionCancelledError` when a write's condition
   * failed or it conflicted (with the reason of each write), `TransactionRejectedError` when
   * DynamoDB refused the whole — nothing applied in all three; any other error leaves it unknown
   * whether it applied: subscribe to the same Observable again (it re-sends the identical request).
   * Absent: this store has no transactions, and `ack({ writes })` throws.
   */
  commitWithWrites?(lease: HeldLease, write: CheckpointWrite, transaction: WritesTransaction): Observable<void>;
  /**
   * The primary key attribute names of each table (`undefined` for one that does not exist): the
   * write lane tells items apart with them, since a transaction may touch an item only once.
   */
  tableKeys?(tables: readonly string[]): Observable<ReadonlyMap<string, readonly string[] | undefined>>;
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
