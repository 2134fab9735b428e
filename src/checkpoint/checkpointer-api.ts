// What the checkpointer of a leased shard is and takes (checkpointer.ts makes it).
import type { Observable, SchedulerLike } from 'rxjs';
import type { LeaseLostError } from '../errors/kinsumer-errors.js';
import type { Clock } from '../ports/clock.js';
import type { HeldLease, LeaseStore, StoredCheckpoint } from '../ports/lease-store.js';
import type { ClientLiveness } from '../ports/liveness.js';
import type { ShardTracker } from '../ports/shard-tracker.js';
import type { CheckpointPosition, KinsumerEvent, StatReceiver } from '../types.js';

/**
 * How often a lease that lives by its owner's clients row still writes its own row. Nobody needs it
 * to stay ours — the client's heartbeat does that — but the Go kinsumer takes a lease whose
 * LastUpdate is older than its TTL (5 minutes at its defaults) the moment it joins, before any
 * member has seen it; and a fence that tells nobody (a hand-edited row) is found within a minute.
 */
export const LEASE_KEEPALIVE_MS = 60_000;

/** Options of `createCheckpointer`. */
export interface CheckpointerOptions {
  readonly store: LeaseStore;
  /** The lease as captured: its counter fences every write. */
  readonly lease: HeldLease;
  /**
   * Where reading really starts when the stored checkpoint does not say it (a LATEST or timestamp
   * start, see `startToKeep`): written with the first write, and by a release with nothing acked.
   * No record is emitted before it is stored.
   */
  readonly start?: StoredCheckpoint;
  /** Least time between two commits of this shard. */
  readonly commitFrequencyMs: number;
  /** Renew the lease after this long without a write (well within leaseTtlMs; the coordination layer passes leaseTtlMs / 3). */
  readonly renewIntervalMs: number;
  /**
   * The client's heartbeat, which keeps a lease captured in its life alive (docs/architecture.md,
   * "Liveness"): the lease counts as confirmed while the client's last accepted heartbeat is less
   * than two renewal intervals old, and its own row is renewed only every {@link LEASE_KEEPALIVE_MS}
   * — or every `renewIntervalMs` (and confirmed by that) while a live member judges leases by their
   * own rows. Absent: the lease is renewed and confirmed by its own writes alone.
   */
  readonly liveness?: ClientLiveness;
  /** Report `shard-stalled` after this long with records pending and the watermark not moving, and again as often. Default 60000. */
  readonly stallWarningMs?: number;
  readonly scheduler: SchedulerLike;
  /**
   * The zombie guard and the stall warnings are differences of its `elapsedNow`; `stored().atMs`
   * is its `wallNow`. Default: the scheduler's `now()` for both.
   */
  readonly clock?: Clock;
  /** Receives `checkpoint`, `lease-released`, `lease-lost`, `shard-stalled`, `retrying` and `error` events. */
  readonly emit: (event: KinsumerEvent) => void;
  readonly stats?: StatReceiver;
}

/** A {@link ShardTracker} that also runs the write lane and releases the lease. */
export interface Checkpointer extends ShardTracker {
  readonly shardId: string;
  /** The lease's counter: the fencing token its records carry. */
  readonly fencingToken: number;
  /**
   * The write lane (commits, renewals, the release) and the stall clock, while subscribed (shared:
   * one lane however many subscribers). Never emits; completes after the release; errors with
   * `LeaseLostError` when a write (the release included) is fenced, or with a `KinsumerError` on
   * a fatal store error. Transient errors are retried.
   */
  readonly run$: Observable<never>;
  /**
   * Idempotent: the release goes through the lane after the write in flight, writing the latest
   * acked position (and `Finished` when the Go rule allows). Does nothing once the lease was lost
   * or a write failed. Never rejects: failures are reported as events.
   */
  close(): Promise<void>;
  /** The latest acked checkpoint (the watermark, or the start kept until the first ack), written or not. */
  checkpoint(): StoredCheckpoint | undefined;
  /** `Finished` is stored for this shard. */
  finishedWritten(): boolean;
  /** close() wrote the release (otherwise the row may still name this lease's owner). */
  releaseWritten(): boolean;
  /**
   * The position stored for the shard (as captured, or as this lease last wrote it) and when this
   * lease last wrote one (`clock.wallNow()`, `undefined` before its first). For `status()`.
   */
  stored(): { readonly checkpoint: CheckpointPosition | undefined; readonly atMs: number | undefined };
  deliveryCount(ticket: number): number;
  recording$(ticket: number): Observable<void> | undefined;
  paced(ticket: number): boolean;
  /**
   * The lease was taken from this client without a write of its telling it (a reset revoked it, or
   * the group ended the client's life): as a fenced write would, it ends the lane with `error`
   * (`lease-lost`); nothing more is written. Does nothing once the lease is over.
   */
  revoke(error: LeaseLostError): void;
}

